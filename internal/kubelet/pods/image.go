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
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	res, err := w.images.ImageStatus(ctx, spec, false)
	if err != nil {
		w.setWaiting(pod, c.Name, "ErrImagePull", err.Error())
		return nil, err
	}
	if res.GetImage() != nil && c.ImagePullPolicy != corev1.PullAlways {
		w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return res.Image, nil
	}
	if c.ImagePullPolicy == corev1.PullNever && res.GetImage() == nil {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		w.setWaiting(pod, c.Name, "ErrImageNeverPull", msg)
		w.recorder.Event(pod, corev1.EventTypeWarning, "ErrImageNeverPull", msg)
		return nil, errors.New(msg)
	}
	if w.pullBackingOff(pod, c) {
		return nil, errPullBackOff
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	auths, missing, err := pullCredentials(ctx, w.client, pod, c.Image)
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
		w.pullFailed(pod, c, err)
		w.setWaiting(pod, c.Name, "ErrImagePull", err.Error())
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		w.recorder.Event(pod, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
		return nil, err
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", c.Image, time.Since(start).Round(time.Millisecond))
	if res, err = w.images.ImageStatus(ctx, spec, false); err != nil {
		return nil, err
	}
	if res.GetImage() == nil {
		return nil, fmt.Errorf("image %q is missing after it was pulled", c.Image)
	}
	return res.Image, nil
}
