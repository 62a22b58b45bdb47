// Package version holds the build's version, set by the linker (-X ...version.Version=...).
package version

import "runtime/debug"

// Version is the release version; builds outside `make build` report the module's version or "dev".
var Version = ""

// String returns the version of this build.
func String() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
