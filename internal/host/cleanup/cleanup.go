// Package cleanup removes what kubeboot created on a node, and reports
// each path it removed.
package cleanup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// Remove deletes the node paths (files or whole trees) and, when the root
// prefix is not "/", the directories above them that are left empty, up
// to the root itself: a test or a second node on one host leaves nothing.
// On "/" the system's own directories (/etc, /var/lib...) are never
// touched. It returns the host paths it removed.
func Remove(fs fsys.FS, nodePaths []string, out io.Writer) ([]string, error) {
	var removed []string
	var errs []error
	sort.Strings(nodePaths)
	for _, p := range nodePaths {
		host := fs.Path(p)
		if _, err := os.Lstat(host); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if fs.DryRun() {
			fmt.Fprintf(out, "[dryrun] Would remove %s\n", host)
			continue
		}
		if err := os.RemoveAll(host); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", host, err))
			continue
		}
		removed = append(removed, host)
		fmt.Fprintf(out, "[reset] Deleted %s\n", host)
	}
	root := filepath.Clean(fs.Path("/"))
	if root != "/" && !fs.DryRun() {
		for _, p := range nodePaths {
			for dir := filepath.Dir(fs.Path(p)); strings.HasPrefix(dir, root+string(filepath.Separator)); dir = filepath.Dir(dir) {
				if os.Remove(dir) != nil { // fails when not empty: stop there
					break
				}
				removed = append(removed, dir)
			}
		}
	}
	return removed, errors.Join(errs...)
}
