// Package files describes files to upload into a Vercel Sandbox and encodes
// them as the gzip-compressed tar archive that the fs/write endpoint expects.
//
// An Entry names a destination path inside the sandbox, a mode and a source
// of content (bytes, an io.Reader of known size, a local file, or every
// regular file of an fs.FS or a local directory). Contents are read
// only while the archive is written, one entry at a time, so uploading a
// large tree costs a small, constant amount of memory.
//
// Destination paths follow the rules of the official SDK: a relative path is
// joined onto the session's working directory, an absolute path is cleaned,
// and the archive entry name is the result made relative to "/": with the
// working directory /vercel/sandbox, "hello.txt" becomes
// "vercel/sandbox/hello.txt" and "/etc/app.conf" becomes "etc/app.conf". Only regular-file entries are written; parent directories are
// created by the server.
//
// WriteTarGz streams the archive into an io.Writer; sandbox.FileSystem.WriteFiles
// sends it as it is written. Length gives the archive's exact length before
// it is written, when it is not compressed.
package files
