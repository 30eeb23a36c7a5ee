package helpers

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// releaser returns the function that hands back the pages of a part of
// s once read, if s lies in a read-only private mapping of a file (the
// embedded pack, mapped from the executable), or nil. Dropping such pages
// loses nothing as long as the process never wrote them: the next read
// faults them in again from the file (page cache). The embedded pack's
// bytes hold no relocation, so even a position-independent build maps
// them as the file has them. Released pages leave the process's RSS and
// PSS; they stay in the page cache (and in a cgroup's memory.current)
// until the kernel needs the memory.
func releaser(s string) func(part string) {
	if !fileMapped(s) {
		return nil
	}
	return releasePages
}

// releasePages tells the kernel the process no longer needs the whole
// pages inside part (MADV_DONTNEED).
func releasePages(part string) {
	if len(part) == 0 {
		return
	}
	b := unsafe.Slice(unsafe.StringData(part), len(part))
	page := uintptr(os.Getpagesize())
	lead := int((page - uintptr(unsafe.Pointer(&b[0]))%page) % page)
	n := (len(b) - lead) &^ int(page-1)
	if lead >= len(b) || n <= 0 {
		return
	}
	_ = unix.Madvise(b[lead:lead+n], unix.MADV_DONTNEED)
}

// fileMapped reports whether s lies within one mapping of the process
// that is not writable and maps a file (/proc/self/maps).
func fileMapped(s string) bool {
	if len(s) == 0 {
		return false
	}
	start := uint64(uintptr(unsafe.Pointer(unsafe.StringData(s))))
	end := start + uint64(len(s))
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode [path]
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		from, err1 := strconv.ParseUint(string(lo), 16, 64)
		to, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || start < from || end > to {
			continue
		}
		return len(f[1]) == 4 && f[1][1] == '-' && f[1][3] == 'p' && string(f[4]) != "0"
	}
	return false
}
