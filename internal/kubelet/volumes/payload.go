package volumes

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/podconfig"
)

// defaultMode is the mode of the files of a configMap, secret,
// downwardAPI or projected volume without defaultMode (the API defaults
// it; this covers objects that skipped defaulting).
const defaultMode int32 = 0o644

func modeOr(m *int32) int32 {
	if m == nil {
		return defaultMode
	}
	return *m
}

func isTrue(b *bool) bool { return b != nil && *b }

// configMap GETs the ConfigMap once per Setup. A missing one is an empty
// ConfigMap when optional.
func (s *setup) configMap(name string, optional bool) (*corev1.ConfigMap, error) {
	r, ok := s.configMaps[name]
	if !ok {
		r.obj, r.err = s.m.client.CoreV1().ConfigMaps(s.pod.Namespace).Get(s.ctx, name, metav1.GetOptions{})
		s.configMaps[name] = r
	}
	if r.err != nil {
		if apierrors.IsNotFound(r.err) && optional {
			return &corev1.ConfigMap{}, nil
		}
		return nil, r.err
	}
	return r.obj, nil
}

// secret is configMap for a Secret.
func (s *setup) secret(name string, optional bool) (*corev1.Secret, error) {
	r, ok := s.secrets[name]
	if !ok {
		r.obj, r.err = s.m.client.CoreV1().Secrets(s.pod.Namespace).Get(s.ctx, name, metav1.GetOptions{})
		s.secrets[name] = r
	}
	if r.err != nil {
		if apierrors.IsNotFound(r.err) && optional {
			return &corev1.Secret{}, nil
		}
		return nil, r.err
	}
	return r.obj, nil
}

// keyPayload is upstream's MakePayload of configMap and secret volumes:
// every key as a file, or only the items (a missing key is skipped when
// optional, an error otherwise).
func keyPayload(items []corev1.KeyToPath, data map[string][]byte, mode int32, optional bool, missing string) (map[string]fileProjection, error) {
	out := make(map[string]fileProjection, len(data))
	if len(items) == 0 {
		for k, v := range data {
			out[k] = fileProjection{Data: v, Mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s: %s", missing, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		out[it.Path] = fileProjection{Data: v, Mode: m}
	}
	return out, nil
}

func configMapPayload(cm *corev1.ConfigMap, items []corev1.KeyToPath, mode int32, optional bool) (map[string]fileProjection, error) {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	return keyPayload(items, data, mode, optional, "configmap references non-existent config key")
}

func secretPayload(sec *corev1.Secret, items []corev1.KeyToPath, mode int32, optional bool) (map[string]fileProjection, error) {
	return keyPayload(items, sec.Data, mode, optional, "references non-existent secret key")
}

func (s *setup) configMapVolume(name string, src *corev1.ConfigMapVolumeSource) (podconfig.Volume, error) {
	optional := isTrue(src.Optional)
	cm, err := s.configMap(src.Name, optional)
	if err != nil {
		return podconfig.Volume{}, err
	}
	payload, err := configMapPayload(cm, src.Items, modeOr(src.DefaultMode), optional)
	if err != nil {
		return podconfig.Volume{}, err
	}
	return s.atomicVolume(PluginConfigMap, name, false, payload)
}

func (s *setup) secretVolume(name string, src *corev1.SecretVolumeSource) (podconfig.Volume, error) {
	optional := isTrue(src.Optional)
	sec, err := s.secret(src.SecretName, optional)
	if err != nil {
		return podconfig.Volume{}, err
	}
	payload, err := secretPayload(sec, src.Items, modeOr(src.DefaultMode), optional)
	if err != nil {
		return podconfig.Volume{}, err
	}
	return s.atomicVolume(PluginSecret, name, true, payload)
}

func (s *setup) downwardAPIVolume(name string, src *corev1.DownwardAPIVolumeSource) (podconfig.Volume, error) {
	payload, err := s.downwardAPIPayload(src.Items, modeOr(src.DefaultMode))
	if err != nil {
		return podconfig.Volume{}, err
	}
	return s.atomicVolume(PluginDownwardAPI, name, true, payload)
}

// atomicVolume writes payload into the volume's directory, on a tmpfs of
// its own when tmpfs (secret, downwardAPI and projected volumes, as
// upstream), and makes the mount points of volumes mounted inside it.
// Containers mount it read-only.
func (s *setup) atomicVolume(plugin, name string, tmpfs bool, payload map[string]fileProjection) (podconfig.Volume, error) {
	dir := s.m.VolumeDir(s.pod.UID, plugin, name)
	mounted := false
	if tmpfs {
		var err error
		if mounted, err = isMountPoint(dir); err != nil {
			return podconfig.Volume{}, err
		}
	}
	if tmpfs && !mounted || !tmpfs && !isDir(dir) {
		if err := setupDir(dir); err != nil {
			return podconfig.Volume{}, err
		}
	}
	if tmpfs && !mounted {
		if err := s.m.mountTmpfs(dir, s.m.tmpfsSize(s.pod, nil)); err != nil {
			return podconfig.Volume{}, err
		}
	}
	if err := makeNestedMountpoints(name, dir, s.pod); err != nil {
		return podconfig.Volume{}, err
	}
	gid := fsGroup(s.pod)
	wrote, err := s.m.writeAtomic(dir, payload, func() { changeOwnership(s.log, dir, gid, true) })
	if err != nil {
		return podconfig.Volume{}, fmt.Errorf("write volume %s: %w", dir, err)
	}
	if wrote {
		s.log.Debug("wrote volume", "volume", name, "files", len(payload))
	}
	return podconfig.Volume{HostPath: dir, ReadOnly: true}, nil
}

// makeNestedMountpoints makes, inside the volume, the directories where
// containers mount other volumes below this one (the volume is mounted
// read-only, so the runtime could not make them), as upstream.
func makeNestedMountpoints(name, dir string, pod *corev1.Pod) error {
	visit := func(c *corev1.Container) error {
		all := make([]string, 0, len(c.VolumeMounts))
		for _, m := range c.VolumeMounts {
			all = append(all, filepath.Clean(m.MountPath))
		}
		slices.Sort(all)
		for _, mine := range c.VolumeMounts {
			if mine.Name != name {
				continue
			}
			base := filepath.Clean(mine.MountPath)
			if strings.HasPrefix(base, "../") {
				return fmt.Errorf("invalid container mount point %v", base)
			}
			// Only the outermost mounts below this one: those below them
			// are made in their volumes.
			var made []string
			for _, mp := range all {
				rel, ok := strings.CutPrefix(mp, base+"/")
				if !ok || slices.ContainsFunc(made, func(p string) bool { return strings.HasPrefix(mp, p) }) {
					continue
				}
				made = append(made, mp+"/")
				if strings.HasPrefix(rel, "..") {
					continue // never inside the writer's own names
				}
				if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
					return fmt.Errorf("unable to create nested volume mountpoints: %v", err)
				}
			}
		}
		return nil
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if err := visit(&cs[i]); err != nil {
				return err
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if err := visit(&c); err != nil {
			return err
		}
	}
	return nil
}
