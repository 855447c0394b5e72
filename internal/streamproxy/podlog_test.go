package streamproxy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/exec"
)

func TestPodLogOptions(t *testing.T) {
	tests := []struct {
		query   string
		want    string // fmt of the interesting fields
		wantErr bool
		invalid string
	}{
		{query: "", want: "c= f=false p=false ts=false tail=<nil> limit=<nil> since=<nil> sinceTime=<nil>"},
		{query: "container=app&follow=true&previous=1&timestamps=", want: "c=app f=true p=true ts=true tail=<nil> limit=<nil> since=<nil> sinceTime=<nil>"},
		{query: "follow=false&previous=0&timestamps=FALSE", want: "c= f=false p=false ts=false tail=<nil> limit=<nil> since=<nil> sinceTime=<nil>"},
		{query: "tailLines=5&limitBytes=10&sinceSeconds=60", want: "c= f=false p=false ts=false tail=5 limit=10 since=60 sinceTime=<nil>"},
		{query: "tail=7", want: "c= f=false p=false ts=false tail=7 limit=<nil> since=<nil> sinceTime=<nil>"},
		{query: "tail=all", want: "c= f=false p=false ts=false tail=<nil> limit=<nil> since=<nil> sinceTime=<nil>"},
		{query: "sinceTime=2026-01-02T03:04:05Z", want: "c= f=false p=false ts=false tail=<nil> limit=<nil> since=<nil> sinceTime=2026-01-02T03:04:05Z"},
		{query: "tailLines=x", wantErr: true},
		{query: "sinceTime=yesterday", wantErr: true},
		{query: "tailLines=-1", invalid: "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{query: "limitBytes=0", invalid: "limitBytes: Invalid value: 0: must be greater than 0"},
		{query: "sinceSeconds=0", invalid: "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{query: "sinceSeconds=1&sinceTime=2026-01-02T03:04:05Z", invalid: "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{query: "stream=Stdout", invalid: "stream: Forbidden: may not be specified"},
	}
	show := func(p *int64) string {
		if p == nil {
			return "<nil>"
		}
		return fmt.Sprint(*p)
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		opts, err := PodLogOptions(q)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err %v, want error %v", tt.query, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		errs := ValidatePodLogOptions(opts)
		if tt.invalid != "" {
			if !strings.Contains(errs.ToAggregate().Error(), tt.invalid) {
				t.Errorf("%q: validation %v, want %q", tt.query, errs, tt.invalid)
			}
			continue
		}
		if len(errs) > 0 {
			t.Errorf("%q: unexpected validation errors %v", tt.query, errs)
		}
		sinceTime := "<nil>"
		if opts.SinceTime != nil {
			sinceTime = opts.SinceTime.UTC().Format("2006-01-02T15:04:05Z")
		}
		got := fmt.Sprintf("c=%s f=%v p=%v ts=%v tail=%s limit=%s since=%s sinceTime=%s", opts.Container, opts.Follow, opts.Previous, opts.Timestamps,
			show(opts.TailLines), show(opts.LimitBytes), show(opts.SinceSeconds), sinceTime)
		if got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.query, got, tt.want)
		}
	}
}

func TestStatusOf(t *testing.T) {
	if s := statusOf(nil); s.Status != metav1.StatusSuccess {
		t.Errorf("nil: %+v", s)
	}
	s := statusOf(fmt.Errorf("wrapped: %w", exec.CodeExitError{Err: errors.New("command terminated with exit code 3"), Code: 3}))
	if s.Reason != "NonZeroExitCode" || s.Details == nil || s.Details.Causes[0].Type != "ExitCode" || s.Details.Causes[0].Message != "3" {
		t.Errorf("exit code: %+v", s)
	}
	if s := statusOf(apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x")); s.Code != 404 {
		t.Errorf("status error: %+v", s)
	}
	if s := statusOf(errors.New("boom")); s.Code != 500 || !strings.Contains(s.Message, "boom") {
		t.Errorf("other: %+v", s)
	}
}
