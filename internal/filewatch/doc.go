// Package filewatch is courier's one way to wait for a file: the
// inotify(7) instance and what its events mean, the safety rescan and the
// poll fallback, the moving of a watch when its directory is removed or
// replaced, and the listing of a directory. Package mailbox builds the
// broker's inbox watcher on [Dir] and its wait for one file on [File];
// package forward shares one [Shared] per Client among the asks waiting
// for their answers (docs/decisions/0009-shared-response-watcher.md).
//
// # Events are hints
//
// No event is the record; the directory is. A watcher looks at what the
// directory holds again at least every [Timing] interval: the safety
// rescan while a watch is armed, the poll cadence while none can be (the
// directory is missing, or no inotify instance can be had), and at once
// after an event overflow. A lost event delays a file by at most an
// interval, and never loses it.
//
// # A removed or replaced directory
//
// A directory removed or renamed away ends its watch ([Result.Lost]); the
// watcher polls for a directory at the path and arms a watch on it. The
// kernel holds back the removal event of a directory someone keeps open,
// so every look re-adds the watch too: inotify hands back the same
// descriptor for the same directory, and a new one proves that the
// directory at the path was replaced (watchset.go).
//
// # Falling back
//
// Where no inotify instance can be had (the per-user instance limit,
// fs.inotify.max_user_instances) a [Dir] says so once through its OnError
// and polls, and tries again at every look; a [Shared] cannot be started
// ([OpenInotify] fails), and its owner waits for each file with a [File]
// instead. On systems without inotify a Dir watches through fsnotify
// (kqueue).
//
// # Lifetimes
//
// Every wait has a deadline (the next rescan or poll) or a context, and no
// goroutine outlives its watcher: a Dir's reader has returned when Close
// does, a File's goroutine when Close or its context ends it, a Shared's
// when Close returns or it stopped by itself.
//
// # A directory that comes back
//
// A pi child's cleanup removes its session's empty requests/, responses/
// and then the session directory after every exchange, and the next
// exchange makes them again. While a directory is missing, a Dir on
// inotify watches its nearest existing ancestor for the creation of the
// next component on the way to it ([Awaiting]); that event is a
// [Result.Recheck], on which the owner calls Check (which walks the watch
// down, or arms the directory's own) and reads the directory, so a file
// written into the new directory is found as soon as one written into the
// old one was. A Shared does the same for the directories its waiters wait
// in. The arm looks for the next component once the ancestor's watch is
// on, so a directory made in between is not missed. Polling remains for
// what inotify cannot do: no instance, --watch poll, and fsnotify's kqueue.
package filewatch
