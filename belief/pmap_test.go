package belief

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestObsMapPersistent checks the persistent map against a plain map, and
// that every older version still answers as it did when it was current.
func TestObsMapPersistent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var versions []obsMap
		var models []map[obsKey]string
		cur := obsMap{}
		model := map[obsKey]string{}
		keys := rapid.SliceOfN(rapid.StringN(0, 3, 6), 1, 8)
		n := rapid.IntRange(0, 200).Draw(t, "n")
		for i := range n {
			parts := keys.Draw(t, "key")
			k := obsKey{parts[0], fmt.Sprint(parts[1:])}
			if _, ok := model[k]; ok {
				continue
			}
			id := fmt.Sprint(i)
			versions, models = append(versions, cur), append(models, model)
			next := make(map[obsKey]string, len(model)+1)
			for a, b := range model {
				next[a] = b
			}
			next[k] = id
			cur, model = cur.put(obsRecord{key: k, eventID: id}), next
		}
		versions, models = append(versions, cur), append(models, model)
		for v, m := range models {
			if versions[v].size != len(m) {
				t.Fatalf("version %d size %d, want %d", v, versions[v].size, len(m))
			}
			for k, id := range m {
				r, ok := versions[v].get(k)
				if !ok || r.eventID != id {
					t.Fatalf("version %d: get(%q) = %v %v, want %s", v, k, r.eventID, ok, id)
				}
			}
			if _, ok := versions[v].get(obsKey{"absent", "key"}); ok {
				t.Fatalf("found an absent key")
			}
		}
	})
}

// TestObsMapManyKeys inserts enough keys to build a deep trie (leaves
// split into child nodes many times) and checks each is found.
func TestObsMapManyKeys(t *testing.T) {
	m := obsMap{}
	for i := range 20000 {
		m = m.put(obsRecord{key: obsKey{"s", fmt.Sprint(i)}, eventID: fmt.Sprint(i)})
	}
	for i := range 20000 {
		r, ok := m.get(obsKey{"s", fmt.Sprint(i)})
		if !ok || r.eventID != fmt.Sprint(i) {
			t.Fatalf("key %d lost", i)
		}
	}
}

func TestObsMapLeafCollision(t *testing.T) {
	// Two records in one leaf (as on a full hash collision) are told apart
	// by their keys.
	k1, k2 := obsKey{"a", "b"}, obsKey{"c", "d"}
	h := keyHash(k1)
	n := insert(nil, h, 0, obsRecord{key: k1, eventID: "1"})
	n = insert(n, h, 0, obsRecord{key: k2, eventID: "2"})
	m := obsMap{root: n, size: 2}
	// k2 is stored under k1's hash, so look it up through the leaf directly.
	leaf := n.slots[0].leaf
	if len(leaf.recs) != 2 || leaf.recs[0].key != k1 || leaf.recs[1].key != k2 {
		t.Fatalf("leaf %+v", leaf)
	}
	if r, ok := m.get(k1); !ok || r.eventID != "1" {
		t.Fatalf("k1 lost")
	}
}
