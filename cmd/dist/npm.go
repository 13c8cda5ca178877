package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// npmPackages writes OUT/npm/*.tgz: the launcher and one package per
// platform, packed by npm pack from folders filled from cmd/bank/npm.
//
// It is long because it fills, packs and checks each package in turn, the
// launcher and then one per platform.
func (r *release) npmPackages() error {
	dest := filepath.Join(r.out, "npm")
	if err := os.RemoveAll(dest); err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(r.out, ".npm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	fill := func(s string, p platform) string {
		return strings.NewReplacer("@VERSION@", r.version, "@COMMIT@", r.commit, "@PLATFORM@", p.npmOS()+"-"+p.npmCPU(),
			"@OS@", p.npmOS(), "@CPU@", p.npmCPU(), "@BINARY@", p.binary()).Replace(s)
	}
	var dirs []string
	for _, p := range r.platforms {
		dir := filepath.Join(stage, p.npmOS()+"-"+p.npmCPU())
		bin, err := os.ReadFile(r.binaryOf(p))
		if err != nil {
			return err
		}
		if err := writeTemplates(dir, map[string]string{"package.json": "platform/package.json", "README.md": "platform/README.md"}, func(s string) string { return fill(s, p) }); err != nil {
			return err
		}
		if err := writeAt(filepath.Join(dir, "bin", p.binary()), bin, 0o755); err != nil {
			return err
		}
		if err := writeAt(filepath.Join(dir, licenseFile), r.license, 0o644); err != nil {
			return err
		}
		if err := writeAt(filepath.Join(dir, noticesFile), r.notices[p], 0o644); err != nil {
			return err
		}
		dirs = append(dirs, dir)
	}
	launcher := filepath.Join(stage, "launcher")
	if err := writeTemplates(launcher, map[string]string{"package.json": "launcher/package.json", "README.md": "README.md"}, func(s string) string { return fill(s, platform{}) }); err != nil {
		return err
	}
	script, err := os.ReadFile(filepath.Join(npmSources, "launcher", "bin", "bank"))
	if err != nil {
		return err
	}
	if err := writeAt(filepath.Join(launcher, "bin", "bank"), script, 0o755); err != nil {
		return err
	}
	if err := writeAt(filepath.Join(launcher, licenseFile), r.license, 0o644); err != nil {
		return err
	}
	if err := checkLauncher(filepath.Join(launcher, "package.json"), r.version); err != nil {
		return err
	}
	dirs = append(dirs, launcher)
	abs, err := filepath.Abs(dest)
	if err != nil {
		return err
	}
	sums := map[string][]byte{}
	for _, dir := range dirs {
		out, err := run(nil, "npm", "pack", "--ignore-scripts", "--json", "--pack-destination", abs, dir)
		if err != nil {
			return fmt.Errorf("npm pack %s: %w", filepath.Base(dir), err)
		}
		var packed []struct{ Filename string }
		if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
			return fmt.Errorf("npm pack %s printed %q", filepath.Base(dir), out)
		}
		raw, err := os.ReadFile(filepath.Join(dest, packed[0].Filename))
		if err != nil {
			return err
		}
		sums[packed[0].Filename] = raw
	}
	if err := writeSums(dest, sums); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dist: %d npm packages and SHA256SUMS in %s\n", len(sums), dest)
	return nil
}

// writeTemplates writes each file of dir from a file of cmd/bank/npm,
// filled in.
func writeTemplates(dir string, files map[string]string, fill func(string) string) error {
	for name, src := range files {
		raw, err := os.ReadFile(filepath.Join(npmSources, src))
		if err != nil {
			return err
		}
		text := fill(string(raw))
		if strings.HasSuffix(name, ".json") {
			if err := checkPackageJSON([]byte(text)); err != nil {
				return fmt.Errorf("%s/%s, filled in: %w", npmSources, src, err)
			}
		}
		if err := writeAt(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func writeAt(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode) // whatever the umask
}

// checkPackageJSON makes sure a package.json is JSON, names the lab's
// licence, and ships the licence file.
func checkPackageJSON(raw []byte) error {
	var pkg struct {
		License string
		Files   []string
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if pkg.License != licenseID {
		return fmt.Errorf("its \"license\" is %q, not %q (the licence in %s)", pkg.License, licenseID, licenseFile)
	}
	if !slices.Contains(pkg.Files, licenseFile) {
		return fmt.Errorf("its \"files\" do not name %s", licenseFile)
	}
	return nil
}

// checkLauncher makes sure the launcher depends on exactly one package
// of ours per platform, at this version, and one PostgreSQL package per
// platform, at one exact version.
func checkLauncher(path, version string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var pkg struct {
		Version              string
		OptionalDependencies map[string]string
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return err
	}
	var ours, pg []string
	pgVersions := map[string]bool{}
	for name, v := range pkg.OptionalDependencies {
		switch {
		case strings.HasPrefix(name, "@zudojs/bank-"):
			if v != version {
				return fmt.Errorf("the launcher wants %s@%s, not this version %s", name, v, version)
			}
			ours = append(ours, strings.TrimPrefix(name, "@zudojs/bank-"))
		case strings.HasPrefix(name, "@embedded-postgres/"):
			if !semverRE.MatchString(v) {
				return fmt.Errorf("the launcher wants %s@%s: pin one exact version", name, v)
			}
			pgVersions[v] = true
			pg = append(pg, strings.TrimPrefix(name, "@embedded-postgres/"))
		}
	}
	var want []string
	for _, s := range Platforms {
		goos, goarch, _ := strings.Cut(s, "/")
		p := platform{goos, goarch}
		want = append(want, p.npmOS()+"-"+p.npmCPU())
	}
	sort.Strings(ours)
	sort.Strings(want)
	if strings.Join(ours, " ") != strings.Join(want, " ") || len(pg) != len(want) || len(pgVersions) != 1 {
		return fmt.Errorf("the launcher's optionalDependencies must name @zudojs/bank-{%s} and as many @embedded-postgres packages at one version; got %v", strings.Join(want, ","), pkg.OptionalDependencies)
	}
	return nil
}
