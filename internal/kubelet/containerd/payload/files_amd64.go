package payload

import "embed"

// files holds what scripts/payload built for amd64.
//
//go:embed all:files/amd64
var files embed.FS

const filesDir = "files/amd64"
