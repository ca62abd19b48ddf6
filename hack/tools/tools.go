//go:build tools

// Package tools pins the code generators Flotilla builds into bin/ (see
// hack/generate-policy-crds.sh). It is a separate module so the generators'
// dependencies never enter the main go.mod.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
