package checkconfig

import (
	"slices"
	"strings"
)

// RuntimeInfo is the node runtime the orch binary carries. The caller
// reads it from orch's containerd packages (daemon.Version,
// payload.Manifest) and passes it in, so this package does not link
// containerd.
type RuntimeInfo struct {
	// ContainerdVersion is the version of the containerd linked into orch
	// (`orch containerd`), e.g. "2.4.2".
	ContainerdVersion string
	// Files names the executables of the embedded payload: runc,
	// containerd-shim-runc-v2 and the CNI plugins.
	Files []string
	// Err is payload.Manifest's error: non-nil when the binary carries no
	// payload (payload.ErrMissing) or one it cannot read.
	Err error
}

// requiredRuntimeFiles are the payload files a node cannot run pods
// without: containerd runs each pod through the shim and runc, and the pod
// network (internal/network's bridge conflist, containerd's loopback) uses
// these CNI plugins.
var requiredRuntimeFiles = []string{"runc", "containerd-shim-runc-v2", "bridge", "host-local", "loopback", "portmap"}

// runtimeFix is the fix of a binary without a (whole) runtime.
const runtimeFix = "use a release build of orch (make build builds the runtime into it), or run agents with " +
	"--container-runtime-endpoint set to the socket of a CRI runtime you run yourself"

// checkRuntime: the agent runs the containerd linked into orch, with the
// runc, shim and CNI plugins orch carries (installed under
// data-dir/agent/runtime/current/bin at start), unless
// --container-runtime-endpoint names a CRI runtime of the host's.
func checkRuntime(rt RuntimeInfo) Result {
	r := Result{Name: "node runtime"}
	containerd := "containerd built in"
	if rt.ContainerdVersion != "" {
		containerd = "containerd " + rt.ContainerdVersion + " built in"
	}
	if rt.Err != nil {
		r.Status, r.Fix = Missing, runtimeFix
		r.Found = containerd + ", but this binary carries no runtime (runc, containerd-shim-runc-v2, CNI plugins)"
		return r
	}
	var missing []string
	for _, f := range requiredRuntimeFiles {
		if !slices.Contains(rt.Files, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		r.Status, r.Fix = Missing, runtimeFix
		r.Found = containerd + ", but the runtime this binary carries lacks " + strings.Join(missing, ", ")
		return r
	}
	// The required files in their order, then the others by name.
	others := slices.DeleteFunc(slices.Clone(rt.Files), func(f string) bool { return slices.Contains(requiredRuntimeFiles, f) })
	slices.Sort(others)
	others = slices.Compact(others)
	r.Status = OK
	r.Found = containerd + "; " + strings.Join(append(slices.Clone(requiredRuntimeFiles), others...), ", ") + " carried in the binary"
	return r
}
