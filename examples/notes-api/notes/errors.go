package notes

import (
	"net/http"

	"github.com/sync-events/sync-events/errcode"
)

// The notes API's own error codes, next to package errcode's.
const (
	// NoteNotFound: the caller has no note with the path's id.
	NoteNotFound errcode.Code = "NOTE_NOT_FOUND"
	// NoteVersionConflict: the note is no longer at the version the PATCH
	// was written against; the client reads it again and rebases.
	NoteVersionConflict errcode.Code = "NOTE_VERSION_CONFLICT"
	// NoteAlreadyExists: a POST named an id the caller already has.
	NoteAlreadyExists errcode.Code = "NOTE_ALREADY_EXISTS"
)

// statuses add the notes API's codes to package errcode's.
var statuses = map[errcode.Code]int{
	NoteNotFound:        http.StatusNotFound,
	NoteVersionConflict: http.StatusConflict,
	NoteAlreadyExists:   http.StatusConflict,
}

var (
	errNotFound      = errcode.New(NoteNotFound, "No note with this id; nothing was stored")
	errStaleVersion  = errcode.New(NoteVersionConflict, "The note has changed since the version sent; nothing was stored")
	errAlreadyExists = errcode.New(NoteAlreadyExists, "A note with this id exists; nothing was stored")
)
