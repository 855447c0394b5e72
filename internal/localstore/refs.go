package localstore

import (
	"encoding/json"
	"strings"

	bolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
)

// collect drops what no stored pod needs: recorded objects nothing
// refers to (see used) and tokens that expired or belong to a service
// account no pod runs as. Collections are bounded by their lists.
func (s *Store) collect(tx *bolt.Tx) error {
	var pods []corev1.Pod
	err := tx.Bucket(collectionsBucket).ForEachBucket(func(k []byte) error {
		if !podsCollection(string(k)) {
			return nil
		}
		return tx.Bucket(collectionsBucket).Bucket(k).Bucket(itemsBucket).ForEach(func(_, v []byte) error {
			raw, err := s.open(v)
			if err != nil {
				return nil
			}
			var pod corev1.Pod
			if json.Unmarshal(raw, &pod) == nil {
				pods = append(pods, pod)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	keep := used(pods)
	objects := tx.Bucket(objectsBucket)
	// Persistent volumes are found through their kept claims.
	err = objects.ForEach(func(k, v []byte) error {
		p, ok := parsePath(string(k))
		if !ok || p.resource != "persistentvolumeclaims" || !keep[string(k)] {
			return nil
		}
		raw, err := s.open(v)
		if err != nil {
			return nil
		}
		var pvc corev1.PersistentVolumeClaim
		if json.Unmarshal(raw, &pvc) == nil && pvc.Spec.VolumeName != "" {
			keep["/api/v1/persistentvolumes/"+pvc.Spec.VolumeName] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := deleteUnless(objects, func(k, _ []byte) bool { return keep[string(k)] }); err != nil {
		return err
	}
	now := s.now()
	return deleteUnless(tx.Bucket(tokensBucket), func(k, v []byte) bool {
		account, _, _ := strings.Cut(string(k), "#")
		if !keep[strings.TrimSuffix(account, "/token")] {
			return false
		}
		raw, err := s.open(v)
		var rec tokenRecord
		return err == nil && json.Unmarshal(raw, &rec) == nil && now.Before(rec.Expires)
	})
}

// podsCollection is true for the key of a collection of pods.
func podsCollection(key string) bool {
	path, _, _ := strings.Cut(key, "?")
	p, ok := parsePath(path)
	return ok && p.resource == "pods"
}

// deleteUnless deletes the keys of b that keep is false for.
func deleteUnless(b *bolt.Bucket, keep func(k, v []byte) bool) error {
	var drop [][]byte
	if err := b.ForEach(func(k, v []byte) error {
		if !keep(k, v) {
			drop = append(drop, append([]byte(nil), k...))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// used are the paths of the objects pods need to run: themselves, their
// Node, service account, runtime class, and the Secrets, ConfigMaps and
// claims their volumes, environment and image pulls name.
func used(pods []corev1.Pod) map[string]bool {
	keep := map[string]bool{}
	for i := range pods {
		pod := &pods[i]
		ns := "/api/v1/namespaces/" + pod.Namespace + "/"
		add := func(resource, name string) {
			if name != "" {
				keep[ns+resource+"/"+name] = true
			}
		}
		add("pods", pod.Name)
		sa := pod.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		add("serviceaccounts", sa)
		if pod.Spec.NodeName != "" {
			keep["/api/v1/nodes/"+pod.Spec.NodeName] = true
		}
		if rc := pod.Spec.RuntimeClassName; rc != nil {
			keep["/apis/node.k8s.io/v1/runtimeclasses/"+*rc] = true
		}
		for _, ref := range pod.Spec.ImagePullSecrets {
			add("secrets", ref.Name)
		}
		for _, v := range pod.Spec.Volumes {
			switch {
			case v.Secret != nil:
				add("secrets", v.Secret.SecretName)
			case v.ConfigMap != nil:
				add("configmaps", v.ConfigMap.Name)
			case v.PersistentVolumeClaim != nil:
				add("persistentvolumeclaims", v.PersistentVolumeClaim.ClaimName)
			case v.Ephemeral != nil:
				add("persistentvolumeclaims", pod.Name+"-"+v.Name)
			case v.Projected != nil:
				for _, src := range v.Projected.Sources {
					if src.Secret != nil {
						add("secrets", src.Secret.Name)
					}
					if src.ConfigMap != nil {
						add("configmaps", src.ConfigMap.Name)
					}
				}
			}
		}
		var containers []corev1.Container
		containers = append(containers, pod.Spec.InitContainers...)
		containers = append(containers, pod.Spec.Containers...)
		for _, c := range pod.Spec.EphemeralContainers {
			containers = append(containers, corev1.Container(c.EphemeralContainerCommon))
		}
		for _, c := range containers {
			for _, from := range c.EnvFrom {
				if from.SecretRef != nil {
					add("secrets", from.SecretRef.Name)
				}
				if from.ConfigMapRef != nil {
					add("configmaps", from.ConfigMapRef.Name)
				}
			}
			for _, env := range c.Env {
				if env.ValueFrom == nil {
					continue
				}
				if r := env.ValueFrom.SecretKeyRef; r != nil {
					add("secrets", r.Name)
				}
				if r := env.ValueFrom.ConfigMapKeyRef; r != nil {
					add("configmaps", r.Name)
				}
			}
		}
	}
	return keep
}
