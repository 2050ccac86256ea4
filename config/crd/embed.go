// Package crd embeds Flotilla's generated CustomResourceDefinitions so that `flotilla hub`
// can install them.
package crd

import "embed"

// Bases holds the generated CRD manifests (bases/*.yaml).
//
//go:embed bases/*.yaml
var Bases embed.FS
