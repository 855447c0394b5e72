package node

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestImages(t *testing.T) {
	img := func(id string, size uint64, tags, digests []string) *runtimeapi.Image {
		return &runtimeapi.Image{Id: id, Size: size, RepoTags: tags, RepoDigests: digests}
	}
	pause := img("sha256:pause", 300, []string{"orch.local/pause:3.10"}, nil)
	busybox := img("sha256:busybox", 2000, []string{"busybox:1.35", "busybox:latest"}, []string{"busybox@sha256:aa"})
	many := img("sha256:many", 10, []string{"a:1", "a:2", "a:3", "a:4"}, []string{"a@sha256:1", "a@sha256:2"})
	untagged := img("sha256:untagged", 5, nil, nil)
	var fifty []*runtimeapi.Image
	for i := range 52 {
		fifty = append(fifty, img(fmt.Sprintf("sha256:%02d", i), uint64(100+i), []string{fmt.Sprintf("img:%d", i)}, nil))
	}

	for _, tc := range []struct {
		name   string
		images []*runtimeapi.Image
		max    int
		want   []corev1.ContainerImage
	}{
		{"none", nil, MaxImages, []corev1.ContainerImage{}},
		{"largest first, digests then tags", []*runtimeapi.Image{pause, untagged, busybox}, MaxImages, []corev1.ContainerImage{
			{Names: []string{"busybox@sha256:aa", "busybox:1.35", "busybox:latest"}, SizeBytes: 2000},
			{Names: []string{"orch.local/pause:3.10"}, SizeBytes: 300},
			{SizeBytes: 5},
		}},
		{"at most five names", []*runtimeapi.Image{many}, MaxImages, []corev1.ContainerImage{
			{Names: []string{"a@sha256:1", "a@sha256:2", "a:1", "a:2", "a:3"}, SizeBytes: 10},
		}},
		{"equal sizes: the larger ID first", []*runtimeapi.Image{img("sha256:a", 7, []string{"a"}, nil), img("sha256:b", 7, []string{"b"}, nil)}, MaxImages,
			[]corev1.ContainerImage{{Names: []string{"b"}, SizeBytes: 7}, {Names: []string{"a"}, SizeBytes: 7}}},
		{"no limit", []*runtimeapi.Image{pause, busybox}, -1, []corev1.ContainerImage{
			{Names: []string{"busybox@sha256:aa", "busybox:1.35", "busybox:latest"}, SizeBytes: 2000},
			{Names: []string{"orch.local/pause:3.10"}, SizeBytes: 300},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Images(tc.images, tc.max); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Images =\n%v\nwant\n%v", got, tc.want)
			}
		})
	}

	t.Run("the 50 largest of 52", func(t *testing.T) {
		got := Images(fifty, MaxImages)
		if len(got) != 50 || got[0].Names[0] != "img:51" || got[49].Names[0] != "img:2" {
			t.Errorf("Images kept %d, from %v to %v; want 50, from img:51 to img:2", len(got), got[0].Names, got[len(got)-1].Names)
		}
	})

	t.Run("the runtime's list is left alone", func(t *testing.T) {
		list := []*runtimeapi.Image{pause, busybox}
		Images(list, 1)
		if list[0] != pause || len(busybox.RepoDigests) != 1 {
			t.Error("Images reordered or changed the list it was given")
		}
	})
}
