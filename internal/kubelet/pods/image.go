package pods

import (
	"context"
	"errors"
	"fmt"
	"orch/internal/kubelet/cri"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageRuntime looks up and pulls images.
type imageRuntime interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

var (
	_ imageRuntime = (*cri.Runtime)(nil)
	_ imageRuntime = (*cri.Fake)(nil)
)

// errPullBackOff says an image pull waits for its back-off.
var errPullBackOff = errors.New("back-off pulling the image")

// ensureImage returns c's image, pulling it when the runtime lacks it.
func (w *Workers) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sbConfig *runtimeapi.PodSandboxConfig) (*runtimeapi.Image, error) {
	return w.ensureImageOf(ctx, pod, c, c.Image, c.ImagePullPolicy, sbConfig)
}

// ensureImageOf returns image, pulling it as policy says, with the pod's
// pull secrets. c is the container it is for: its waiting state says why
// the image is not there, and its pulls back off; nil for an image volume.
func (w *Workers) ensureImageOf(ctx context.Context, pod *corev1.Pod, c *corev1.Container, image string, policy corev1.PullPolicy, sbConfig *runtimeapi.PodSandboxConfig) (*runtimeapi.Image, error) {
	waiting := func(reason, message string) {
		if c != nil {
			w.setWaiting(pod, c.Name, reason, message)
		}
	}
	spec := &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image}
	res, err := w.images.ImageStatus(ctx, spec, false)
	if err != nil {
		waiting("ErrImagePull", err.Error())
		return nil, err
	}
	if res.GetImage() != nil && policy != corev1.PullAlways {
		w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", image)
		return res.Image, nil
	}
	if policy == corev1.PullNever && res.GetImage() == nil {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		waiting("ErrImageNeverPull", msg)
		w.recorder.Event(pod, corev1.EventTypeWarning, "ErrImageNeverPull", msg)
		return nil, errors.New(msg)
	}
	if c != nil && w.pullBackingOff(pod, c) {
		return nil, errPullBackOff
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulling", "Pulling image %q", image)
	start := time.Now()
	auths, missing, err := pullCredentials(ctx, w.client, pod, image)
	if len(missing) > 0 {
		w.log.Info("unable to retrieve pull secrets, the image pull may not succeed", "pod", key(pod), "secrets", missing)
	}
	if err == nil {
		_, err = pullWithCredentials(auths, func(auth *runtimeapi.AuthConfig) (string, error) {
			return w.images.PullImage(ctx, spec, auth, sbConfig)
		})
	}
	if err != nil {
		if len(missing) > 0 {
			w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
				"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
		}
		if c != nil {
			w.pullFailed(pod, c, err)
		}
		waiting("ErrImagePull", err.Error())
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", image, err)
		w.recorder.Event(pod, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
		return nil, err
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", image, time.Since(start).Round(time.Millisecond))
	if res, err = w.images.ImageStatus(ctx, spec, false); err != nil {
		return nil, err
	}
	if res.GetImage() == nil {
		return nil, fmt.Errorf("image %q is missing after it was pulled", image)
	}
	return res.Image, nil
}
