package functiongit

// SetMaxDownload lowers the download cap for a test; the returned func restores it.
func SetMaxDownload(n int64) (restore func()) {
	old := maxDownload
	maxDownload = n
	return func() { maxDownload = old }
}
