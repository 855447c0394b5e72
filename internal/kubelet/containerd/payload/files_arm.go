package payload

import "embed"

// files holds what scripts/payload built for arm.
//
//go:embed all:files/arm
var files embed.FS

const filesDir = "files/arm"
