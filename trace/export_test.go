package trace

import "github.com/verity-go/verity/internal/canon"

var canonTransform = canon.Transform
