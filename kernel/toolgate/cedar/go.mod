module github.com/verity-go/verity/kernel/toolgate/cedar

go 1.26.0

require (
	github.com/cedar-policy/cedar-go v1.9.1
	github.com/verity-go/verity v0.0.0-00010101000000-000000000000
)

require (
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1 // indirect
	golang.org/x/exp v0.0.0-20220921023135-46d9e7742f1e // indirect
)

replace github.com/verity-go/verity => ../../..
