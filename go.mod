module github.com/seed6639df8c/courier

go 1.26.0

require (
	github.com/rogpeppe/go-internal v1.16.0
	github.com/rs/zerolog v1.35.1
)

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/renameio/v2 v2.0.2 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
