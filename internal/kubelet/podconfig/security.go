package podconfig

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// defaultMaskedPaths and defaultReadonlyPaths are upstream's, applied to
// every container unless its procMount is Unmasked.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// NamespaceOptions are the pod's namespaces: the node's network, PID and
// IPC namespaces for hostNetwork, hostPID and hostIPC; a PID namespace
// shared by the pod for shareProcessNamespace; otherwise a network and
// IPC namespace per pod and a PID namespace per container.
func NamespaceOptions(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// checkUserNamespaces refuses hostUsers: false, which orch does not
// implement.
func checkUserNamespaces(pod *corev1.Pod) error {
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		return fmt.Errorf("pod %s/%s asks for a user namespace (hostUsers: false): %w", pod.Namespace, pod.Name, ErrUnsupported)
	}
	return nil
}

// EffectiveSecurityContext merges the pod's security context (SELinux,
// runAsUser/Group, runAsNonRoot) with the container's, whose fields win.
func EffectiveSecurityContext(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{}
	if p := pod.Spec.SecurityContext; p != nil {
		sc.SELinuxOptions = p.SELinuxOptions
		sc.RunAsUser = p.RunAsUser
		sc.RunAsGroup = p.RunAsGroup
		sc.RunAsNonRoot = p.RunAsNonRoot
	}
	cs := c.SecurityContext
	if cs == nil {
		return sc
	}
	if cs.SELinuxOptions != nil {
		sc.SELinuxOptions = cs.SELinuxOptions
	}
	if cs.RunAsUser != nil {
		sc.RunAsUser = cs.RunAsUser
	}
	if cs.RunAsGroup != nil {
		sc.RunAsGroup = cs.RunAsGroup
	}
	if cs.RunAsNonRoot != nil {
		sc.RunAsNonRoot = cs.RunAsNonRoot
	}
	sc.Capabilities = cs.Capabilities
	sc.Privileged = cs.Privileged
	sc.ReadOnlyRootFilesystem = cs.ReadOnlyRootFilesystem
	sc.AllowPrivilegeEscalation = cs.AllowPrivilegeEscalation
	sc.ProcMount = cs.ProcMount
	return sc
}

// ImageUser splits the user of an image config ("uid", "uid:gid", "name",
// "name:group") into a numeric uid or a user name, as containerd reports
// them in ImageStatus. Both are empty for an image with no user.
func ImageUser(user string) (uid *int64, username string) {
	user, _, _ = strings.Cut(user, ":")
	if user == "" {
		return nil, ""
	}
	if n, err := strconv.ParseInt(user, 10, 64); err == nil {
		return &n, ""
	}
	return nil, user
}

// VerifyRunAsNonRoot checks runAsNonRoot as the kubelet does before it
// creates a container: the effective runAsUser must not be 0; without one
// the image's user must be numeric and not 0. imageUID and imageUsername
// come from the image's status; both empty means root.
func VerifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, imageUID *int64, imageUsername string) error {
	sc := EffectiveSecurityContext(pod, c)
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	where := fmt.Sprintf("(pod: %q, container: %s)", fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID), c.Name)
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return Invalidf("container's runAsUser breaks non-root policy %s", where)
		}
		return nil
	}
	switch {
	case imageUID == nil && imageUsername != "":
		return Invalidf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", imageUsername, where)
	case imageUID == nil || *imageUID == 0:
		return Invalidf("container has runAsNonRoot and image will run as root %s", where)
	case *imageUID < 0 || *imageUID > math.MaxInt32:
		return Invalidf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive %s", *imageUID, math.MaxInt32, math.MaxInt32, where)
	}
	return nil
}

// ContainerSecurityContext is the container's Linux security context as
// the kubelet sends it. Without a runAsUser the image's user goes in
// (root when the image has none).
func ContainerSecurityContext(pod *corev1.Pod, c *corev1.Container, node Node, imageUID *int64, imageUsername string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	if err := checkUserNamespaces(pod); err != nil {
		return nil, err
	}
	sc := EffectiveSecurityContext(pod, c)
	out := &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser:        int64Value(sc.RunAsUser),
		RunAsGroup:       int64Value(sc.RunAsGroup),
		Privileged:       sc.Privileged != nil && *sc.Privileged,
		ReadonlyRootfs:   sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		NamespaceOptions: NamespaceOptions(pod),
		SelinuxOptions:   selinuxOptions(sc.SELinuxOptions),
		// allowPrivilegeEscalation: false sets no_new_privs; unset does not.
		NoNewPrivs: sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
	}
	if caps := sc.Capabilities; caps != nil {
		out.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{}, DropCapabilities: []string{}}
		for _, a := range caps.Add {
			out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(d))
		}
	}
	if out.RunAsUser == nil {
		switch {
		case imageUID != nil:
			out.RunAsUser = &runtimeapi.Int64Value{Value: *imageUID}
		case imageUsername == "":
			out.RunAsUser = &runtimeapi.Int64Value{Value: 0}
		}
		out.RunAsUsername = imageUsername
	}
	if p := pod.Spec.SecurityContext; p != nil {
		if p.FSGroup != nil {
			out.SupplementalGroups = append(out.SupplementalGroups, *p.FSGroup)
		}
		out.SupplementalGroups = append(out.SupplementalGroups, p.SupplementalGroups...)
		if p.SupplementalGroupsPolicy != nil {
			v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*p.SupplementalGroupsPolicy)]
			if !ok {
				return nil, Invalidf("unsupported supplementalGroupsPolicy %q", *p.SupplementalGroupsPolicy)
			}
			out.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy(v)
		}
	}
	if sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
		out.MaskedPaths, out.ReadonlyPaths = []string{}, []string{}
	} else {
		out.MaskedPaths = append(append([]string{}, defaultMaskedPaths...), node.ExtraMaskedPaths...)
		out.ReadonlyPaths = append([]string{}, defaultReadonlyPaths...)
	}
	var err error
	if out.Seccomp, err = seccompProfile(pod, c, node); err != nil {
		return nil, err
	}
	if out.Apparmor, out.ApparmorProfile, err = appArmorProfile(pod, c); err != nil {
		return nil, err
	}
	return out, nil
}

func selinuxOptions(o *corev1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// seccompProfile: the container's profile, else the pod's, else
// RuntimeDefault with --seccomp-default and Unconfined without.
func seccompProfile(pod *corev1.Pod, c *corev1.Container, node Node) (*runtimeapi.SecurityProfile, error) {
	var p *corev1.SeccompProfile
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	} else if pod.Spec.SecurityContext != nil {
		p = pod.Spec.SecurityContext.SeccompProfile
	}
	switch {
	case p == nil && node.SeccompDefault, p != nil && p.Type == corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case p != nil && p.Type == corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, Invalidf("localhostProfile must be set if seccompProfile type is Localhost")
		}
		path := filepath.Join(node.SeccompProfileRoot, *p.LocalhostProfile)
		if rel, err := filepath.Rel(node.SeccompProfileRoot, path); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			// The API refuses such paths; a static pod might not.
			return nil, Invalidf("localhostProfile %q is outside the seccomp profile root %s", *p.LocalhostProfile, node.SeccompProfileRoot)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: path}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// appArmorProfile: the container's field, else the deprecated
// per-container pod annotation, else the pod's field, else none (the
// runtime applies its default). The second result is the deprecated
// string form still sent for older runtimes.
func appArmorProfile(pod *corev1.Pod, c *corev1.Container) (*runtimeapi.SecurityProfile, string, error) {
	var p *corev1.AppArmorProfile
	switch {
	case c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil:
		p = c.SecurityContext.AppArmorProfile
	case annotationAppArmor(pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]) != nil:
		p = annotationAppArmor(pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name])
	case pod.Spec.SecurityContext != nil:
		p = pod.Spec.SecurityContext.AppArmorProfile
	}
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, corev1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case corev1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, corev1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", Invalidf("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			corev1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", Invalidf("unknown apparmor profile type %q", p.Type)
}

func annotationAppArmor(v string) *corev1.AppArmorProfile {
	switch {
	case v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return nil
}

// hasPrivilegedContainer is true when any container of the pod is
// privileged: the sandbox is then privileged too.
func hasPrivilegedContainer(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			return true
		}
	}
	return false
}
