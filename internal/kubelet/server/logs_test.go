package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/envtest"
)

func TestParseLogLine(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC)
	tests := []struct {
		name    string
		line    string
		want    logLine
		wantErr bool
	}{
		{name: "full stdout", line: "2026-01-02T03:04:05.6Z stdout F hello\n", want: logLine{Time: ts, Stream: "stdout", Content: []byte("hello\n")}},
		{name: "full without newline", line: "2026-01-02T03:04:05.600000000Z stderr F oops", want: logLine{Time: ts, Stream: "stderr", Content: []byte("oops\n")}},
		{name: "partial", line: "2026-01-02T03:04:05.6Z stdout P part\n", want: logLine{Time: ts, Stream: "stdout", Partial: true, Content: []byte("part")}},
		{name: "extra tags", line: "2026-01-02T03:04:05.6Z stdout F:x:y tagged\n", want: logLine{Time: ts, Stream: "stdout", Content: []byte("tagged\n")}},
		{name: "spaces kept", line: "2026-01-02T03:04:05.6Z stdout F  a  b \n", want: logLine{Time: ts, Stream: "stdout", Content: []byte(" a  b \n")}},
		{name: "empty content", line: "2026-01-02T03:04:05.6Z stdout F \n", want: logLine{Time: ts, Stream: "stdout", Content: []byte("\n")}},
		{name: "offset", line: "2026-01-02T04:04:05.6+01:00 stdout F x\n", want: logLine{Time: ts, Stream: "stdout", Content: []byte("x\n")}},
		{name: "no timestamp", line: "garbage", wantErr: true},
		{name: "bad timestamp", line: "yesterday stdout F x\n", wantErr: true},
		{name: "bad stream", line: "2026-01-02T03:04:05.6Z stdin F x\n", wantErr: true},
		{name: "no tag", line: "2026-01-02T03:04:05.6Z stdout\n", wantErr: true},
		{name: "bad tag", line: "2026-01-02T03:04:05.6Z stdout X x\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLogLine([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !got.Time.Equal(tt.want.Time) || got.Stream != tt.want.Stream || got.Partial != tt.want.Partial || !bytes.Equal(got.Content, tt.want.Content) {
				t.Errorf("got %+v (%q), want %+v (%q)", got, got.Content, tt.want, tt.want.Content)
			}
		})
	}
}

func FuzzParseLogLine(f *testing.F) {
	for _, seed := range []string{
		"2026-01-02T03:04:05.6Z stdout F hello\n",
		"2026-01-02T03:04:05.123456789+02:00 stderr P part",
		"2026-01-02T03:04:05Z stdout F:x \n",
		" stdout F x", "x y z", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := append([]byte(nil), line...)
		l, err := parseLogLine(line)
		if !bytes.Equal(line, orig) {
			t.Fatalf("parseLogLine changed its input")
		}
		if err != nil {
			return
		}
		if l.Stream != runtimeapi.Stdout && l.Stream != runtimeapi.Stderr {
			t.Fatalf("stream %q accepted", l.Stream)
		}
		if !l.Partial && !bytes.HasSuffix(l.Content, []byte{'\n'}) {
			t.Fatalf("full content %q has no newline", l.Content)
		}
		// What the runtime would write for the parsed record parses the same.
		tag, end := "F", ""
		if l.Partial {
			tag, end = "P", "\n"
		}
		again, err := parseLogLine([]byte(l.Time.Format(time.RFC3339Nano) + " " + string(l.Stream) + " " + tag + " " + string(l.Content) + end))
		if err != nil || !again.Time.Equal(l.Time) || again.Stream != l.Stream || again.Partial != l.Partial || !bytes.Equal(again.Content, l.Content) {
			t.Fatalf("round trip of %q: got %+v, %v; want %+v", orig, again, err, l)
		}
	})
}

// criLog formats lines as a runtime writes them, one second apart from base.
func criLog(base time.Time, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		parts := strings.SplitN(l, " ", 3)
		b.WriteString(base.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano) + " " + parts[0] + " " + parts[1] + " " + parts[2] + "\n")
	}
	return b.String()
}

func writeLog(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func i64(v int64) *int64 { return &v }

func TestReadLogs(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	content := criLog(base, "stdout F one", "stderr F two", "stdout P thr", "stdout F ee", "stdout F four")
	tests := []struct {
		name           string
		opts           LogOptions
		noStderr       bool
		want, wantErrs string
	}{
		{name: "all", want: "one\ntwo\nthree\nfour\n"},
		{name: "tail 2", opts: LogOptions{TailLines: i64(2)}, want: "ee\nfour\n"},
		{name: "tail 0", opts: LogOptions{TailLines: i64(0)}, want: ""},
		{name: "tail more than there is", opts: LogOptions{TailLines: i64(50)}, want: "one\ntwo\nthree\nfour\n"},
		{name: "limit bytes", opts: LogOptions{LimitBytes: i64(6)}, want: "one\ntw"},
		{name: "since", opts: LogOptions{Since: base.Add(2 * time.Second)}, want: "three\nfour\n"},
		{name: "timestamps join partial lines", opts: LogOptions{Timestamps: true, TailLines: i64(3)},
			want: "2026-01-02T03:04:07.000000000Z three\n2026-01-02T03:04:09.000000000Z four\n"},
		{name: "stdout only", noStderr: true, want: "one\nthree\nfour\n"},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeLog(t, path, content)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			var stderr io.Writer = &out
			if tt.noStderr {
				stderr = nil
			}
			if err := ReadLogs(context.Background(), slog.New(slog.DiscardHandler), path, "c1", &tt.opts, nil, &out, stderr); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got %q, want %q", out.String(), tt.want)
			}
		})
	}
}

func TestTailStartWithoutFinalNewline(t *testing.T) {
	data := "a\nb\nc"
	for n, want := range map[int64]int64{0: 5, 1: 4, 2: 2, 3: 0, 9: 0, -1: 0} {
		got, err := tailStart(strings.NewReader(data), int64(len(data)), n)
		if err != nil || got != want {
			t.Errorf("tailStart(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
}

// statusFake answers ContainerStatus with a state the test sets.
type statusFake struct {
	mu      sync.Mutex
	running bool
}

func (f *statusFake) set(running bool) { f.mu.Lock(); f.running = running; f.mu.Unlock() }

func (f *statusFake) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	state := runtimeapi.ContainerState_CONTAINER_EXITED
	if f.running {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: state}}, nil
}

func TestReadLogsFollowsRotationAndEndsWhenTheContainerExits(t *testing.T) {
	defer func(p, c time.Duration) { followPoll, runningCheckEvery = p, c }(followPoll, runningCheckEvery)
	followPoll, runningCheckEvery = 5*time.Millisecond, 20*time.Millisecond
	base := time.Now().UTC()
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeLog(t, path, criLog(base, "stdout F first"))
	rt := &statusFake{running: true}
	var out envtest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(context.Background(), slog.New(slog.DiscardHandler), path, "c1", &LogOptions{Follow: true}, rt, &out, &out)
	}()
	envtest.EventuallyTrue(t, "the first line", func() bool { return out.String() == "first\n" })

	// A line written in two steps goes out once it is whole.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := criLog(base, "stdout F second")
	f.WriteString(line[:10])
	time.Sleep(30 * time.Millisecond)
	f.WriteString(line[10:])
	f.Close()
	envtest.EventuallyTrue(t, "the second line", func() bool { return out.String() == "first\nsecond\n" })

	// Rotation: the file is renamed and a new one created at the path.
	if err := os.Rename(path, path+".20260102-030405"); err != nil {
		t.Fatal(err)
	}
	writeLog(t, path, criLog(base, "stdout F third"))
	envtest.EventuallyTrue(t, "the line of the new file", func() bool { return out.String() == "first\nsecond\nthird\n" })

	// The container exits after writing a last line: it is read, then the follow ends.
	f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(criLog(base, "stderr F last"))
	f.Close()
	rt.set(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLogs still follows after the container exited")
	}
	if got := out.String(); got != "first\nsecond\nthird\nlast\n" {
		t.Errorf("got %q", got)
	}
}

func TestReadLogsFollowEndsWithTheContext(t *testing.T) {
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 5 * time.Millisecond
	path := filepath.Join(t.TempDir(), "0.log")
	writeLog(t, path, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(ctx, slog.New(slog.DiscardHandler), path, "c1", &LogOptions{Follow: true}, &statusFake{running: true}, io.Discard, io.Discard)
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ReadLogs did not end with its context")
	}
}
