package campaign

// LockDir takes the lock that Execute and RemoveData hold while they work
// in a campaign directory, for another runner command that works in such a
// directory (a bisect's, whose data directories RemoveData removes). It
// fails at once when another runner holds it; release lets go of it.
func LockDir(dir string) (release func(), err error) { return lockOut(dir) }
