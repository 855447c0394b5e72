package payload

import "embed"

// files holds what scripts/payload built for arm64.
//
//go:embed all:files/arm64
var files embed.FS

const filesDir = "files/arm64"
