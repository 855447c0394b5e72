//go:build !linux

package staticpods

import "io/fs"

// identify is what tells one version of a file from another without
// reading it: size and modification time.
func identify(fi fs.FileInfo) fileID {
	return fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
