package streamproxy

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// queryBool reads a boolean query parameter as upstream's parameter codec
// does: absent, "0" and "false" are false, anything else (even "") true.
func queryBool(q url.Values, name string) bool {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false")
}

func queryInt64(q url.Values, name string) (*int64, error) {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return nil, nil
	}
	i, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not an integer", name, v[0])
	}
	return &i, nil
}

// PodLogOptions decodes the query of pods/log (and of the kubelet's
// containerLogs) into core/v1 PodLogOptions, as upstream's parameter codec
// does, including the old "tail" parameter ("all" meaning no limit).
func PodLogOptions(q url.Values) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{
		Container:                    q.Get("container"),
		Follow:                       queryBool(q, "follow"),
		Previous:                     queryBool(q, "previous"),
		Timestamps:                   queryBool(q, "timestamps"),
		InsecureSkipTLSVerifyBackend: queryBool(q, "insecureSkipTLSVerifyBackend"),
	}
	if tail, ok := q["tail"]; ok && len(tail) > 0 && q.Get("tailLines") == "" {
		q = cloneValues(q)
		if tail[0] == "all" {
			q.Del("tailLines")
		} else {
			q.Set("tailLines", tail[0])
		}
	}
	var err error
	for name, dst := range map[string]**int64{"sinceSeconds": &opts.SinceSeconds, "tailLines": &opts.TailLines, "limitBytes": &opts.LimitBytes} {
		if *dst, err = queryInt64(q, name); err != nil {
			return nil, err
		}
	}
	if v := q.Get("sinceTime"); v != "" {
		var t metav1.Time
		if err := t.UnmarshalQueryParameter(v); err != nil {
			return nil, fmt.Errorf("sinceTime: %q is not an RFC 3339 time", v)
		}
		opts.SinceTime = &t
	}
	if v, ok := q["stream"]; ok && len(v) > 0 {
		stream := v[0]
		opts.Stream = &stream
	}
	return opts, nil
}

// ValidatePodLogOptions checks opts as upstream's validation does. Stream
// selection is an alpha feature upstream, off by default: any stream is
// refused.
func ValidatePodLogOptions(opts *corev1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
	}
	if opts.Stream != nil {
		errs = append(errs, field.Forbidden(field.NewPath("stream"), "may not be specified"))
	}
	return errs
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
