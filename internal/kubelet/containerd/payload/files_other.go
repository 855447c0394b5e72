//go:build !amd64 && !arm64 && !arm

package payload

import "embed"

// files is empty: orch carries a runtime for amd64, arm64 and arm only.
var files embed.FS

const filesDir = "files/none"
