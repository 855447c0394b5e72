// Package version is orch's version and the Kubernetes version it serves.
// The Makefile sets Version and GitCommit with -ldflags -X.
package version

import (
	"fmt"
	"runtime"
	"strings"

	apiversion "k8s.io/apimachinery/pkg/version"
)

var (
	// Version is orch's own version.
	Version = "v0.1.0-dev"
	// GitCommit is the commit orch was built from.
	GitCommit = "unknown"
	// BuildDate is when it was built (RFC 3339).
	BuildDate = "1970-01-01T00:00:00Z"
)

// Kubernetes is the Kubernetes version whose API orch serves (k8s.io/api in go.mod).
const Kubernetes = "v1.37.2"

// Info is what /version answers: the Kubernetes version with orch's as build metadata.
func Info() apiversion.Info {
	major, minor := "1", "37"
	if parts := strings.Split(strings.TrimPrefix(Kubernetes, "v"), "."); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	return apiversion.Info{
		Major: major, Minor: minor,
		GitVersion:   GitVersion(),
		GitCommit:    GitCommit,
		GitTreeState: "clean",
		BuildDate:    BuildDate,
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}
}

// GitVersion is the Kubernetes version with orch's version as build
// metadata, like k3s's "v1.37.2+k3s1": v1.37.2+orch.v0.1.0.
func GitVersion() string {
	return Kubernetes + "+orch." + strings.ReplaceAll(Version, "+", ".")
}
