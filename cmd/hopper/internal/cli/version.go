package cli

import (
	"fmt"
	"runtime/debug"
)

// versionLine is what `hopper version` and `hopper --version` print: the
// module's version, the VCS revision it was built from and the Go that
// built it, as the binary itself records them (debug.ReadBuildInfo), so a
// bug report names the build without anyone having to stamp it.
func versionLine(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "hopper (no build information)\n"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	revision, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	line := "hopper " + version
	if revision != "" {
		if len(revision) > 12 {
			revision = revision[:12]
		}
		if modified {
			revision += " (modified)"
		}
		line += ", revision " + revision
	}
	return fmt.Sprintf("%s, %s\n", line, info.GoVersion)
}

// version is `hopper version`: it takes no flags or arguments.
func (a *app) version(args []string) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			return errHelp
		}
		return usagef("unexpected argument %q", args[0])
	}
	fmt.Fprint(a.s.Stdout, versionLine(debug.ReadBuildInfo()))
	return nil
}
