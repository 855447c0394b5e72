// Package volumes is the kubelet's volume manager: before the pod workers
// create a pod's containers, Manager.Setup makes every volume of the pod
// ready on the host and returns where each one is, for
// podconfig.Container.Volumes (podconfig turns volumeMounts and subPaths
// into CRI mounts below those paths).
//
// Volumes live where upstream's kubelet keeps them,
// <Root>/pods/<uid>/volumes/<plugin>/<name>:
//
//   - emptyDir: a directory, or a tmpfs for medium Memory (sized by
//     sizeLimit, the pod's memory limit and the node's allocatable);
//     OverSizeLimit measures disk-backed ones against their sizeLimit so
//     the caller can evict.
//   - configMap, secret, downwardAPI, projected (configMap, secret,
//     downwardAPI and serviceAccountToken sources): files written with
//     upstream's atomic layout (a timestamped directory behind the ..data
//     symlink), rewritten only when their content changes; all but
//     configMap on a tmpfs of their own. Service account tokens come from
//     TokenRequest and are refreshed after 80% of their lifetime or 24
//     hours. clusterTrustBundle sources are the PEM of the bundles they
//     name or select. podCertificate sources are a key made here and the
//     chain a signer issues for it through a PodCertificateRequest (the
//     pod waits for the first; a new one is asked for after the chain's
//     beginRefreshAt).
//   - hostPath: the path itself, after upstream's type checks.
//   - persistentVolumeClaim: the bound hostPath or local PersistentVolume's
//     path (a local-path volume's directory is made on first use); a
//     generic ephemeral volume is the claim POD-VOLUME, if the pod owns it.
//   - image: the image pulled by the pod workers (its pull policy, the
//     pod's pull secrets) and mounted read-only from a containerd snapshot
//     view (Manager.Images; the agent's own containerd only), released at
//     TearDown.
//
// fsGroup gives the group the volumes' contents as upstream's
// SetVolumeOwnership does. Everything else (network and cloud volumes,
// csi, ephemeral, hugepages; image without Images) fails with an error wrapping
// podconfig.ErrUnsupported.
//
// Setup is called on every sync and is cheap when nothing changed: it
// GETs each ConfigMap and Secret the pod refers to once and a claim only
// until it is resolved. Failures are *MountErrors whose text is that of
// upstream's FailedMount events:
//
//	m := volumes.New(filepath.Join(dataDir, "agent", "kubelet"), client, log)
//	m.Allocatable = node.Status.Allocatable
//	vols, err := m.Setup(ctx, pod)
//	for _, e := range volumes.MountErrors(err) {
//		recorder.Event(pod, corev1.EventTypeWarning, "FailedMount", e.Error())
//	}
//	// ... podconfig.Container{Volumes: vols, ...}
//	// when the pod is gone:
//	err = m.TearDown(pod.UID)
package volumes
