package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// LogOptions select what ReadLogs writes, as core/v1 PodLogOptions do.
type LogOptions struct {
	// TailLines, when not nil, starts at the last TailLines lines.
	TailLines *int64
	// LimitBytes, when not nil, stops after that many bytes.
	LimitBytes *int64
	// Since skips lines written before it.
	Since time.Time
	// Follow keeps reading as the container writes, across rotations of
	// its log file, until the container is no longer running.
	Follow bool
	// Timestamps prefixes each line with its time (RFC 3339, nanoseconds).
	Timestamps bool
}

// containerStatuser tells whether a followed container still runs.
type containerStatuser interface {
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// How often a followed log is polled for new lines, and how often the
// runtime is asked whether the container still runs (upstream's kubelet
// rechecks every second too).
var (
	followPoll        = 100 * time.Millisecond
	runningCheckEvery = time.Second
)

var errLimitReached = errors.New("log byte limit reached")

// logWriter writes parsed lines to stdout and stderr (either may be nil to
// drop that stream), applying Since, Timestamps and LimitBytes.
type logWriter struct {
	stdout, stderr io.Writer
	opts           *LogOptions
	remain         int64
	// atLineStart is whether the next content starts a new output line (a
	// partial record continues the line, and gets no timestamp).
	atLineStart bool
}

func (w *logWriter) write(l logLine) error {
	if l.Time.Before(w.opts.Since) {
		return nil
	}
	out := w.stdout
	if l.Stream == runtimeapi.Stderr {
		out = w.stderr
	}
	startsLine := w.atLineStart
	w.atLineStart = !l.Partial
	if out == nil {
		return nil
	}
	line := l.Content
	if w.opts.Timestamps && startsLine {
		line = append([]byte(l.Time.Format(timeLayoutOut)+" "), line...)
	}
	if int64(len(line)) > w.remain {
		line = line[:w.remain]
	}
	n, err := out.Write(line)
	w.remain -= int64(n)
	if err != nil {
		return err
	}
	if w.remain <= 0 {
		return errLimitReached
	}
	return nil
}

// ReadLogs writes the CRI log file at path of container id to stdout and
// stderr as opts says. Following, it polls the file, reopens path when the
// file was rotated (renamed and created anew), and returns once the
// container no longer runs and its log is read to the end, or ctx ends.
func ReadLogs(ctx context.Context, log *slog.Logger, path, id string, opts *LogOptions, rt containerStatuser, stdout, stderr io.Writer) error {
	return readLogs(ctx, log, path, id, opts, rt, stdout, stderr, func() {})
}

// readLogs is ReadLogs calling positioned once the file is open at the
// first line to write (the server sends its headers then, so that a line
// written after the client saw them is never skipped by tailLines=0).
func readLogs(ctx context.Context, log *slog.Logger, path, id string, opts *LogOptions, rt containerStatuser, stdout, stderr io.Writer, positioned func()) error {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("failed to open log file %q: %w", path, err)
	}
	defer func() { f.Close() }()
	if opts.TailLines != nil {
		info, err := f.Stat()
		if err != nil {
			return err
		}
		start, err := tailStart(f, info.Size(), *opts.TailLines)
		if err != nil {
			return fmt.Errorf("failed to tail %d lines of log file %q: %w", *opts.TailLines, path, err)
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return err
		}
	}
	positioned()
	w := &logWriter{stdout: stdout, stderr: stderr, opts: opts, remain: math.MaxInt64, atLineStart: true}
	if opts.LimitBytes != nil {
		w.remain = *opts.LimitBytes
	}
	r := bufio.NewReader(f)
	var pending []byte // a line read up to EOF before its newline was written
	var lastCheck time.Time
	exited := false
	for {
		chunk, err := r.ReadBytes('\n')
		pending = append(pending, chunk...)
		if err == nil {
			if werr := writeLine(log, w, pending); werr != nil {
				return ignoreLimit(werr)
			}
			pending = pending[:0]
			continue
		}
		if err != io.EOF {
			return fmt.Errorf("failed to read log file %q: %w", path, err)
		}
		if !opts.Follow || exited {
			if len(pending) > 0 {
				return ignoreLimit(writeLine(log, w, pending))
			}
			return nil
		}
		// At the end of the file: a rotation moves on to the new file.
		if len(pending) == 0 && !sameFile(f, path) {
			if nf, err := os.Open(path); err == nil {
				f.Close()
				f, r = nf, bufio.NewReader(nf)
				continue
			}
		}
		if time.Since(lastCheck) >= runningCheckEvery {
			lastCheck = time.Now()
			running, err := isRunning(ctx, rt, id)
			if err != nil {
				return err
			}
			if !running {
				exited = true // read what is left, then stop
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

func writeLine(log *slog.Logger, w *logWriter, raw []byte) error {
	l, err := parseLogLine(raw)
	if err != nil {
		log.Debug("skipping a malformed line of a container log", "err", err)
		return nil
	}
	return w.write(l)
}

func ignoreLimit(err error) error {
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// isRunning asks the runtime whether the container runs; a runtime that is
// unavailable for a moment counts as running, as upstream counts it.
func isRunning(ctx context.Context, rt containerStatuser, id string) (bool, error) {
	resp, err := rt.ContainerStatus(ctx, id, false)
	if err != nil {
		if status.Code(err) == codes.Unavailable {
			return true, nil
		}
		return false, err
	}
	return resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
}
