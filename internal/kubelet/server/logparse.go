package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Timestamp layouts of CRI log files: runtimes write up to nanoseconds and
// may drop trailing zeros; the kubelet prints all nine digits.
const (
	timeLayoutIn  = time.RFC3339Nano
	timeLayoutOut = "2006-01-02T15:04:05.000000000Z07:00"
)

// logLine is one record of a CRI log file:
//
//	<RFC3339Nano time> <stdout|stderr> <P|F>[:more tags] <content>
//
// P marks a partial line, continued by the next record of the same stream;
// F a full one. Content holds the text with its newline for a full line and
// without one for a partial line.
type logLine struct {
	Time    time.Time
	Stream  runtimeapi.LogStreamType
	Partial bool
	Content []byte
}

// parseLogLine parses one line of a CRI log file (with or without its
// trailing newline). Content aliases line.
func parseLogLine(line []byte) (logLine, error) {
	var l logLine
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return l, errors.New("no timestamp")
	}
	t, err := time.Parse(timeLayoutIn, string(ts))
	if err != nil {
		return l, fmt.Errorf("bad timestamp %q: %w", ts, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return l, errors.New("no stream")
	}
	l.Stream = runtimeapi.LogStreamType(stream)
	if l.Stream != runtimeapi.Stdout && l.Stream != runtimeapi.Stderr {
		return l, fmt.Errorf("unknown stream %q", stream)
	}
	tags, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return l, errors.New("no tag")
	}
	first, _, _ := bytes.Cut(tags, []byte(runtimeapi.LogTagDelimiter))
	switch runtimeapi.LogTag(first) {
	case runtimeapi.LogTagPartial:
		l.Partial = true
		content = bytes.TrimSuffix(content, []byte{'\n'})
	case runtimeapi.LogTagFull:
		if len(content) == 0 || content[len(content)-1] != '\n' {
			content = append(content[:len(content):len(content)], '\n')
		}
	default:
		return l, fmt.Errorf("unknown tag %q", tags)
	}
	l.Time, l.Content = t, content
	return l, nil
}

// tailStart returns the offset of the first of the last n lines of f (0
// when n < 0 or f has no more than n lines). A last line without a newline
// counts as a line.
func tailStart(f io.ReaderAt, size int64, n int64) (int64, error) {
	if n < 0 || size == 0 {
		return 0, nil
	}
	if n == 0 {
		return size, nil
	}
	const block = 4096
	buf := make([]byte, block)
	end := size
	// A final newline ends the last line; it does not start another.
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		end--
	}
	var seen int64
	for end > 0 {
		start := max(0, end-block)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && err != io.EOF {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] == '\n' {
				if seen++; seen == n {
					return start + int64(i) + 1, nil
				}
			}
		}
		end = start
	}
	return 0, nil
}

// sameFile reports whether path still names the file f has open.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	if err != nil {
		return false
	}
	return os.SameFile(a, b)
}
