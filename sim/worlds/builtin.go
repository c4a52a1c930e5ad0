package worlds

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed *.yaml
var builtinFS embed.FS

// BuiltinNames lists the example worlds shipped with the simulator, sorted.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtinFS, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Builtin parses the shipped example world with the given name (see BuiltinNames).
func Builtin(name string) (*Scenario, error) {
	data, err := builtinFS.ReadFile(path.Clean(name) + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("worlds: no built-in world %q (have %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("worlds: built-in %s: %w", name, err)
	}
	return s, nil
}
