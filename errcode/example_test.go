package errcode_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sync-events/sync-events/errcode"
)

// An application's own code, declared beside its other constants; package
// mutation gives it a status (Options.Statuses).
const NoteNotFound errcode.Code = "NOTE_NOT_FOUND"

// A refusal the client reads, apart from the text the logs read: the
// client is told the code and the message, the logs the cause too.
func Example() {
	cause := errors.New("GetItem notes/n-1: no item")
	err := fmt.Errorf("patch: %w", &errcode.Error{Code: NoteNotFound, Message: "No note has that id", Err: cause})

	fmt.Println(errcode.CodeOf(err))
	if e, ok := errcode.Of(err); ok {
		fmt.Println(e.Message)
	}
	fmt.Println(err) // for the logs
	// Output:
	// NOTE_NOT_FOUND
	// No note has that id
	// patch: NOTE_NOT_FOUND: GetItem notes/n-1: no item
}

// Every invalid field of a body named at once, in a shape the API's
// contract describes.
func ExampleInvalid() {
	err := errcode.Invalid("The note is invalid", errcode.FieldErrors{
		{Field: "title", Message: "must be at most 200 characters"},
		{Field: "version", Message: "is required"},
	})
	details, _ := json.Marshal(err.Details)
	fmt.Println(err.Code, string(details))
	// Output:
	// VALIDATION_FAILED [{"field":"title","message":"must be at most 200 characters"},{"field":"version","message":"is required"}]
}
