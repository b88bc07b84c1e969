package kube

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (slash-separated path: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree is every regular file under dir by its slash-separated path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestArchiveRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "runs", "lock-8k")
	files := map[string]string{
		"results.json":             `{"id":"lock-8k"}` + "\n",
		"plots/latency.svg":        strings.Repeat("<svg/>", 5000),
		"plots/hgrm/fair-8000.txt": "Value Percentile\n",
	}
	writeTree(t, src, files)
	if err := os.Mkdir(filepath.Join(src, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteArchive(&b, src); err != nil {
		t.Fatal(err)
	}
	// Lines of 76 characters, as a container log keeps them.
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, l := range lines {
		if len(l) > 76 || i < len(lines)-1 && len(l) != 76 {
			t.Fatalf("line %d is %d characters", i+1, len(l))
		}
	}
	if got := EncodedLen(int64(base64.StdEncoding.DecodedLen(len(strings.Join(lines, ""))))); got < int64(b.Len())-3 || got > int64(b.Len())+3 {
		t.Errorf("EncodedLen %d, wrote %d", got, b.Len())
	}
	if err := ReadArchive(bytes.NewReader(b.Bytes()), dst); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dst)
	if len(got) != len(files) {
		t.Errorf("read %d files, want %d: %v", len(got), len(files), got)
	}
	for name, want := range files {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if info, err := os.Stat(filepath.Join(dst, "empty")); err != nil || !info.IsDir() {
		t.Errorf("the empty folder: %v", err)
	}
	// The same archive read again does not overwrite the files.
	if err := ReadArchive(bytes.NewReader(b.Bytes()), dst); err == nil || !errors.Is(err, os.ErrExist) {
		t.Errorf("read over the same files: %v, want a file exists error", err)
	}

	// The shell's way, where there are base64 and tar, gives the same files.
	if _, err := exec.LookPath("tar"); err == nil {
		if _, err := exec.LookPath("base64"); err == nil {
			sh := t.TempDir()
			cmd := exec.Command("sh", "-c", "base64 -d | tar -xz -C "+sh)
			cmd.Stdin = bytes.NewReader(b.Bytes())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("base64 -d | tar -xz: %v\n%s", err, out)
			}
			if got := readTree(t, sh); len(got) != len(files) || got["results.json"] != files["results.json"] {
				t.Errorf("base64 -d | tar -xz: %v", got)
			}
		}
	}
}

func TestArchiveRefusesEmptyAndMissing(t *testing.T) {
	empty := t.TempDir()
	if err := os.Mkdir(filepath.Join(empty, "plots"), 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		empty:                                "no files in it",
		filepath.Join(t.TempDir(), "absent"): "no such folder",
	} {
		var b bytes.Buffer
		if err := WriteArchive(&b, dir); err == nil || !strings.Contains(err.Error(), want) || b.Len() > 0 {
			t.Errorf("%s: error %v, wrote %d bytes; want %q and nothing written", dir, err, b.Len(), want)
		}
	}
	link := t.TempDir()
	writeTree(t, link, map[string]string{"results.json": "{}"})
	if err := os.Symlink("/etc/passwd", filepath.Join(link, "passwd")); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteArchive(&b, link); err == nil || !strings.Contains(err.Error(), "not a file or a folder") || b.Len() > 0 {
		t.Errorf("a symbolic link: error %v, wrote %d bytes", err, b.Len())
	}
}

// An archive whose encoding would not fit in a container log is refused
// before anything is written, naming its size. (At a limit of 1 MiB: the
// race detector makes compressing 8 MiB take seconds.)
func TestArchiveSizeLimit(t *testing.T) {
	const limit = 1 << 20
	dir := t.TempDir()
	noise := make([]byte, 1<<20) // incompressible: 1 MiB is 1.4 MiB in base64
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"results.json": string(noise)})
	var b bytes.Buffer
	err := writeArchive(&b, dir, limit)
	if !errors.Is(err, ErrArchiveTooLarge) || b.Len() > 0 {
		t.Fatalf("error %v, wrote %d bytes; want ErrArchiveTooLarge and nothing written", err, b.Len())
	}
	for _, want := range []string{"holds 1.0 MiB in 1 file", "1.4 MiB compressed and in base64", "more than the 1.0 MiB", "--no-plots", "--keep"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in %v", want, err)
		}
	}
	// Under the limit is written.
	writeTree(t, dir, map[string]string{"results.json": string(noise[:limit*3/4-16<<10])})
	b.Reset()
	if err := writeArchive(&b, dir, limit); err != nil || b.Len() > limit {
		t.Errorf("3/4 MiB: error %v, %d bytes", err, b.Len())
	}
}

// rawArchive is an archive of the entries given, as WriteArchive encodes
// one, so that ReadArchive can be shown what WriteArchive never writes.
func rawArchive(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var z bytes.Buffer
	gz := gzip.NewWriter(&z)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		if h.Typeflag == tar.TypeReg {
			h.Size = 2
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte("x\n")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return []byte(base64.StdEncoding.EncodeToString(z.Bytes()))
}

func TestReadArchiveRefusesUnsafeEntries(t *testing.T) {
	for _, c := range []struct {
		what string
		hdr  *tar.Header
	}{
		{"absolute", &tar.Header{Name: "/tmp/evil", Typeflag: tar.TypeReg, Mode: 0o644}},
		{"parent", &tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644}},
		{"inner parent", &tar.Header{Name: "plots/../../evil", Typeflag: tar.TypeReg, Mode: 0o644}},
		{"symlink", &tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}},
		{"hard link", &tar.Header{Name: "link", Typeflag: tar.TypeLink, Linkname: "../outside"}},
		{"device", &tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}},
	} {
		parent := t.TempDir()
		dir := filepath.Join(parent, "run")
		err := ReadArchive(bytes.NewReader(rawArchive(t, c.hdr)), dir)
		if !errors.Is(err, ErrUnsafeArchive) {
			t.Errorf("%s (%s): error %v, want ErrUnsafeArchive", c.what, c.hdr.Name, err)
		}
		if _, err := os.Stat(filepath.Join(parent, "evil")); err == nil {
			t.Errorf("%s: wrote outside the folder", c.what)
		}
	}
}

func TestReadArchiveRefusesWhatIsNotOne(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"results.json": strings.Repeat("{}\n", 10000)})
	var b bytes.Buffer
	if err := WriteArchive(&b, src); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]struct {
		log  string
		want string
	}{
		"an error logged": {"zkbench: kube archive /results/x/merged/x: no such folder\n", "illegal base64"},
		"cut short":       {b.String()[:b.Len()/2], "cut short"},
		"nothing":         {"", "not an archive"},
	} {
		if err := ReadArchive(strings.NewReader(c.log), t.TempDir()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", what, err, c.want)
		}
	}
}
