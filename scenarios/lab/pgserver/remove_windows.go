package pgserver

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/windows"
)

// removeTree removes dir and everything below it, and never follows a
// link (a symbolic link, a junction, any reparse point): each entry is
// opened by its name relative to its parent's open handle, without
// following a reparse point; a directory is listed through its handle,
// and each entry is deleted through its own handle, a link as itself.
// So nothing below dir is looked up by a path that could be changed into
// a link while the removal runs.
//
// Go's os.RemoveAll deletes with FILE_DISPOSITION_INFORMATION_EX, which
// wine 8 does not implement: it stopped at the first file ("unlinkat …:
// Invalid function."), and every bank run after a slot was refilled
// failed with it until the cache was deleted by hand. The plain
// FILE_DISPOSITION_INFO used here is what every Windows, and wine, has.
// A missing dir is not an error; when an entry cannot go, the rest still
// goes, and the first error is returned.
func removeTree(dir string) error {
	name, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return &fs.PathError{Op: "remove", Path: dir, Err: err}
	}
	h, err := windows.CreateFile(name, removeAccess, shareAll, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_SHARING_VIOLATION) {
		h, err = windows.CreateFile(name, deleteAccess, shareAll, nil, windows.OPEN_EXISTING,
			windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	}
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: dir, Err: err}
	}
	return removeOpen(h, dir)
}

const (
	shareAll = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE
	// removeAccess lists a directory, clears a read-only attribute, and
	// deletes; deleteAccess only deletes (a file another process holds
	// open in a way that refuses a reader).
	removeAccess = windows.DELETE | windows.SYNCHRONIZE | windows.FILE_LIST_DIRECTORY |
		windows.FILE_READ_ATTRIBUTES | windows.FILE_WRITE_ATTRIBUTES
	deleteAccess = windows.DELETE | windows.SYNCHRONIZE | windows.FILE_READ_ATTRIBUTES
)

// removeAt removes the entry name of the directory open as parent.
func removeAt(parent windows.Handle, name, path string) error {
	h, err := openAt(parent, name, removeAccess)
	if err == windows.STATUS_ACCESS_DENIED || err == windows.STATUS_SHARING_VIOLATION {
		h, err = openAt(parent, name, deleteAccess)
	}
	switch err {
	case nil:
		return removeOpen(h, path)
	case windows.STATUS_OBJECT_NAME_NOT_FOUND, windows.STATUS_OBJECT_PATH_NOT_FOUND, windows.STATUS_DELETE_PENDING:
		return nil // gone already, or going
	}
	if status, ok := err.(windows.NTStatus); ok {
		err = status.Errno()
	}
	return &fs.PathError{Op: "remove", Path: path, Err: err}
}

// openAt opens the entry name of the directory open as parent, by that
// handle and without following a reparse point.
func openAt(parent windows.Handle, name string, access uint32) (windows.Handle, error) {
	u, err := windows.NewNTUnicodeString(name)
	if err != nil {
		return 0, err
	}
	attrs := windows.OBJECT_ATTRIBUTES{RootDirectory: parent, ObjectName: u}
	attrs.Length = uint32(unsafe.Sizeof(attrs))
	var h windows.Handle
	var status windows.IO_STATUS_BLOCK
	err = windows.NtCreateFile(&h, access, &attrs, &status, nil, 0, shareAll, windows.FILE_OPEN,
		windows.FILE_OPEN_REPARSE_POINT|windows.FILE_OPEN_FOR_BACKUP_INTENT|windows.FILE_SYNCHRONOUS_IO_NONALERT, 0, 0)
	return h, err
}

// removeOpen removes the entry open as h (path names it in errors), and
// closes h: a real directory's entries first, then the entry itself. A
// reparse point is never listed, only deleted.
func removeOpen(h windows.Handle, path string) error {
	f := os.NewFile(uintptr(h), path) // closes h, when done
	defer f.Close()
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	attrs := info.FileAttributes
	var first error
	if attrs&windows.FILE_ATTRIBUTE_DIRECTORY != 0 && attrs&windows.FILE_ATTRIBUTE_REPARSE_POINT == 0 {
		names, err := f.Readdirnames(-1) // through the handle
		if err != nil {
			return &fs.PathError{Op: "remove", Path: path, Err: err}
		}
		for _, name := range names {
			if err := removeAt(h, name, filepath.Join(path, name)); err != nil && first == nil {
				first = err
			}
		}
	}
	if attrs&windows.FILE_ATTRIBUTE_READONLY != 0 {
		// As os.RemoveAll does on Unix: a read-only file goes too.
		basic := fileBasicInfo{FileAttributes: attrs &^ windows.FILE_ATTRIBUTE_READONLY}
		if basic.FileAttributes == 0 {
			basic.FileAttributes = windows.FILE_ATTRIBUTE_NORMAL
		}
		windows.SetFileInformationByHandle(h, windows.FileBasicInfo, (*byte)(unsafe.Pointer(&basic)), uint32(unsafe.Sizeof(basic)))
	}
	deleteFile := byte(1) // FILE_DISPOSITION_INFO: DeleteFile = TRUE, done when the last handle closes
	if err := windows.SetFileInformationByHandle(h, windows.FileDispositionInfo, &deleteFile, 1); err != nil && first == nil {
		first = &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return first
}

// fileBasicInfo is FILE_BASIC_INFO; times left at 0 are not changed.
type fileBasicInfo struct {
	CreationTime, LastAccessTime, LastWriteTime, ChangeTime int64
	FileAttributes                                          uint32
	_                                                       uint32
}

// clearDir removes a slot's directory, so that a fresh copy can take its
// place. A file in it may still be open (a postgres.exe of an earlier run,
// not yet gone), and Windows removes such a file only once it is closed:
// the directory is first renamed aside (dir.old-RANDOM), so that the name
// is free at once, then removed as far as it can be; what is left is
// removed by a later clearing in the same place. A failure to delete
// never blocks a run; only a directory that can neither be renamed nor
// removed does.
func clearDir(dir string) error {
	removeAside(dir)
	aside := dir + ".old-" + randomHex(4)
	if err := os.Rename(dir, aside); err != nil {
		if _, statErr := os.Lstat(dir); errors.Is(statErr, fs.ErrNotExist) {
			return nil
		}
		return removeTree(dir)
	}
	removeTree(aside) // what is still open stays, for the next clearing
	return nil
}

// removeAside removes, best effort, what clearings of the slots beside
// dir left.
func removeAside(dir string) {
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "*.old-*"))
	for _, l := range left {
		removeTree(l)
	}
}
