package lab

// LockFile is lockFile, for the specs of the bounded wait on a held lock.
var LockFile = lockFile
