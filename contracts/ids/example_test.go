package ids_test

import (
	"fmt"

	"github.com/verity-go/verity/contracts/ids"
)

func ExampleParse() {
	id, err := ids.Parse("retrieval:b7ad6b7169203331:3:kb/returns-policy.md:chunk=12")
	fmt.Println(id.Form, id.SpanID, id.Position, id.DocumentID, id.ChunkID, err)
	_, err = ids.Parse("retrieval:b7ad6b7169203331:03:kb/returns-policy.md")
	fmt.Println(err)
	// Output:
	// retrieval b7ad6b7169203331 3 kb/returns-policy.md 12 <nil>
	// ids: bad canonical id "retrieval:b7ad6b7169203331:03:kb/returns-policy.md": document position has a leading zero
}
