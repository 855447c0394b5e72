package etcdsnapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"orch/internal/etcdsnapshot"
)

// streamMaintenance serves a snapshot stream of data that ends with err.
type streamMaintenance struct {
	clientv3.Maintenance
	data []byte
	err  error
}

func (m streamMaintenance) Snapshot(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(io.MultiReader(bytes.NewReader(m.data), errReader{m.err})), nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestSaveChecksEtcdsHashOfTheStream(t *testing.T) {
	db := bytes.Repeat([]byte{7}, 2048)
	sum := sha256.Sum256(db)
	whole := append(bytes.Clone(db), sum[:]...)
	cut := bytes.Clone(whole[:512+32]) // the right length, the wrong hash

	for _, tc := range []struct {
		name   string
		data   []byte
		end    error
		wantOK bool
	}{
		{"whole stream ending with EOF", whole, io.EOF, true},
		// How the in-process client (v3client) ends a whole stream.
		{"whole stream ending with context.Canceled", whole, context.Canceled, true},
		{"cut stream ending with context.Canceled", cut, context.Canceled, false},
		{"cut stream ending with EOF", whole[:1000], io.EOF, false},
		{"whole stream ending with a connection error", whole, errors.New("connection reset"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clientv3.NewCtxClient(context.Background())
			c.Maintenance = streamMaintenance{data: tc.data, err: tc.end}
			dir := t.TempDir()
			snap, err := etcdsnapshot.Save(context.Background(), c, dir, "", "n", time.Unix(100, 0))
			entries, _ := os.ReadDir(dir)
			if !tc.wantOK {
				if err == nil {
					t.Fatal("Save accepted a bad stream")
				}
				if len(entries) != 0 {
					t.Errorf("a failed Save left %d files behind", len(entries))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(snap.Path); !bytes.Equal(got, whole) || len(entries) != 2 {
				t.Errorf("saved %d bytes in %d files, want the %d of the stream and a checksum", len(got), len(entries), len(whole))
			}
		})
	}
}

func TestSaveRefusesBadNames(t *testing.T) {
	c := clientv3.NewCtxClient(context.Background())
	for _, tc := range []struct{ name, node string }{{"../x", "n"}, {"x", ""}, {"x", "a/b"}, {".hidden", "n"}} {
		if _, err := etcdsnapshot.Save(context.Background(), c, t.TempDir(), tc.name, tc.node, time.Now()); err == nil || !strings.Contains(err.Error(), "save etcd snapshot") {
			t.Errorf("Save(name %q, node %q) = %v, want an error", tc.name, tc.node, err)
		}
	}
	if _, err := etcdsnapshot.Save(context.Background(), nil, t.TempDir(), "", "n", time.Now()); err == nil {
		t.Error("Save without a client succeeded")
	}
}
