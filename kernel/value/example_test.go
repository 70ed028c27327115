package value_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/verity-go/verity/kernel/value"
)

// Values keep their kind: an int, a float and a string that print alike
// are different, and the JSON form says which is which.
func Example() {
	one, oneF, oneS := value.Int(1), value.Float(1), value.String("1")
	fmt.Println(one.Equal(oneF), one.Equal(oneS))
	fmt.Println(one, oneF, oneS)

	v, err := value.Of(map[string]any{"sent": 2, "to": []any{"a@example.com"}})
	if err != nil {
		panic(err)
	}
	sent, _ := v.Field("sent")
	n, isInt := sent.AsInt()
	fmt.Println(v, n, isInt)

	back, err := value.Decode([]byte(v.String()))
	fmt.Println(back.Equal(v), err)

	_, err = value.Float(math.NaN()).MarshalJSON()
	fmt.Println(errors.Is(err, value.ErrInvalidValue))
	// Output:
	// false false
	// 1 {"$float":"1"} "1"
	// {"sent":2,"to":["a@example.com"]} 2 true
	// true <nil>
	// true
}
