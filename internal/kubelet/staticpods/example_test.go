package staticpods_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"orch/internal/kubelet/staticpods"
)

func Example() {
	dir, err := os.MkdirTemp("", "pod-manifests")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: busybox}]\n"
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(manifest), 0o600); err != nil {
		panic(err)
	}

	src := staticpods.NewSource(dir, "node-1", slog.New(slog.NewTextHandler(io.Discard, nil)))
	src.OnChange(func(key string) { fmt.Println("changed:", key) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Start(ctx) }()
	<-src.Synced()

	pod, _ := src.Get("default", "web-node-1")
	fmt.Println(pod.Spec.NodeName, pod.Spec.RestartPolicy, pod.Spec.Containers[0].ImagePullPolicy)
	fmt.Println(staticpods.IsStatic(pod), staticpods.IsMirror(pod), pod.Annotations[staticpods.AnnotationHash] == string(pod.UID))
	cancel()
	<-done
	// Output:
	// changed: default/web-node-1
	// node-1 Always Always
	// true false true
}
