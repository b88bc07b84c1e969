package kube

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The fetch pod copies the merged results out of the volume through its
// log: the zkbench image (FROM scratch) has no tar for kubectl cp, but
// `zkbench kube archive DIR` writes DIR as a gzip-compressed tar in base64
// lines, which `kubectl logs pod/FETCH | base64 -d | tar -xz -C DIR`, or
// ReadArchive, turns back into files.

// MaxArchiveBytes bounds the encoded archive WriteArchive writes: the
// kubelet rotates a container's log at 10 MiB by default
// (containerLogMaxSize), and `kubectl logs` shows only the current file, so
// a longer archive would come out cut short.
const MaxArchiveBytes = 8 << 20

// archiveLineLen is the length of the base64 lines (as base64(1) and MIME
// write them).
const archiveLineLen = 76

// ErrArchiveTooLarge is WriteArchive's error when the encoded archive
// would be more than MaxArchiveBytes.
var ErrArchiveTooLarge = errors.New("kube: archive too large for a container log")

// ErrUnsafeArchive is ReadArchive's error for an entry it will not write:
// an absolute path, a path with "..", a link or a device.
var ErrUnsafeArchive = errors.New("kube: unsafe archive entry")

// WriteArchive writes the regular files and folders under dir, by their
// paths relative to dir, as a gzip-compressed tar encoded in base64 lines
// of 76 characters. It builds the archive in memory first and writes
// nothing when dir is missing, holds no file, or the encoding would be more
// than MaxArchiveBytes (ErrArchiveTooLarge). Symbolic links and other
// special files are refused.
func WriteArchive(w io.Writer, dir string) error {
	return writeArchive(w, dir, MaxArchiveBytes)
}

// EncodedLen is the length of n bytes encoded as WriteArchive encodes
// them: base64 in lines of 76 characters, each ended by a newline.
func EncodedLen(n int64) int64 {
	chars := (n + 2) / 3 * 4
	return chars + (chars+archiveLineLen-1)/archiveLineLen
}

func writeArchive(w io.Writer, dir string, limit int64) error {
	root := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		root = r // a link to the folder is walked too
	}
	info, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("kube archive %s: no such folder (did the merge write the merged results? its log says)", dir)
	case err != nil:
		return fmt.Errorf("kube archive: %w", err)
	case !info.IsDir():
		return fmt.Errorf("kube archive %s: not a folder", dir)
	}
	// The compressed archive is kept while its encoding fits under limit
	// and only counted beyond, so that the error can say how large it is.
	buf := &cappedBuffer{max: limit * 3 / 4}
	gz := gzip.NewWriter(buf)
	tw := tar.NewWriter(gz)
	var files, size int64
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return fmt.Errorf("%s: %s, not a file or a folder: the archive holds only those", p, info.Mode().Type())
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if info.IsDir() {
			hdr.Name += "/"
			return tw.WriteHeader(hdr)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(tw, f)
		files, size = files+1, size+n
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		return fmt.Errorf("kube archive %s: %w", dir, err)
	}
	if files == 0 {
		return fmt.Errorf("kube archive %s: no files in it (did the merge write the merged results? its log says)", dir)
	}
	if enc := EncodedLen(buf.n); enc > limit {
		return fmt.Errorf("%w: %s holds %s in %s, %s compressed and in base64, more than the %s a container log can be trusted to hold (the kubelet rotates it at 10 MiB by default, and kubectl logs shows the last file only): copy the folder out of the results volume another way (zkbench kube run --keep keeps it, or give an existing --claim, then mount that claim in a pod of your own), or leave the plots to be drawn locally (--no-plots, then zkbench plot)",
			ErrArchiveTooLarge, dir, mib(size), plural(files, "file"), mib(enc), mib(limit))
	}
	enc := base64.NewEncoder(base64.StdEncoding, &lineWriter{w: w})
	if _, err := enc.Write(buf.Bytes()); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// cappedBuffer keeps the first max bytes written to it and counts them all.
type cappedBuffer struct {
	bytes.Buffer
	max, n int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.n += int64(len(p))
	if room := b.max - int64(b.Len()); room > 0 {
		b.Buffer.Write(p[:min(int64(len(p)), room)])
	}
	return len(p), nil
}

// lineWriter breaks what is written to it into lines of archiveLineLen
// characters.
type lineWriter struct {
	w   io.Writer
	col int
}

func (l *lineWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if l.col == archiveLineLen {
			if _, err := io.WriteString(l.w, "\n"); err != nil {
				return written, err
			}
			l.col = 0
		}
		n := min(len(p), archiveLineLen-l.col)
		if _, err := l.w.Write(p[:n]); err != nil {
			return written, err
		}
		l.col += n
		written += n
		p = p[n:]
	}
	return written, nil
}

// ReadArchive reads what WriteArchive wrote (base64 lines of a
// gzip-compressed tar) from r and writes its files and folders under dir,
// creating dir if needed. It refuses (ErrUnsafeArchive) an entry with an
// absolute path or "..", a link or any other special file, and a file that
// exists already; every write stays inside dir (os.Root). An archive cut
// short, or text that is not an archive (an error the fetch pod logged
// instead), is an error naming what was read.
func ReadArchive(r io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	defer root.Close()
	gz, err := gzip.NewReader(base64.NewDecoder(base64.StdEncoding, r))
	if err != nil {
		return fmt.Errorf("kube: not an archive of zkbench kube archive: %w", err)
	}
	tr := tar.NewReader(gz)
	files := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("kube: reading the archive after %d files: %w (was the log cut short?)", files, err)
		}
		name, err := archivePath(hdr)
		if err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeDir {
			if err := root.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("kube: %w", err)
			}
			continue
		}
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("kube: %w", err)
			}
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("kube: %w", err)
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("kube: %s: %w (was the log cut short?)", name, err)
		}
		files++
	}
	// Read to the end of the gzip stream, so that its checksum is checked.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return fmt.Errorf("kube: reading the archive: %w", err)
	}
	if files == 0 {
		return errors.New("kube: the archive holds no files")
	}
	return nil
}

// archivePath is the relative, slash-separated path of entry hdr, or why
// ReadArchive refuses it.
func archivePath(hdr *tar.Header) (string, error) {
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	default:
		return "", fmt.Errorf("%w: %q is of type %q: only files and folders are read", ErrUnsafeArchive, hdr.Name, hdr.Typeflag)
	}
	name := strings.TrimSuffix(hdr.Name, "/")
	if name == "" || path.IsAbs(name) || strings.Contains(name, `\`) || filepath.IsAbs(name) {
		return "", fmt.Errorf("%w: %q: not a relative path", ErrUnsafeArchive, hdr.Name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: %q: a path with \"..\"", ErrUnsafeArchive, hdr.Name)
		}
	}
	return path.Clean(name), nil
}
