package errcode

// Details point at what was wrong with a request. They are one of the
// shapes below, a closed set that an API's contract can describe whole
// (openapi/openapi.yaml does): each is answered as JSON as it stands, and
// no code needs to look inside one to decide anything.
type Details interface{ details() }

// Field names the part of the request at fault: {"field":"body"}.
type Field struct {
	Field string `json:"field"`
}

// FieldError names a field of a body and what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// FieldErrors lists every invalid field of a body.
type FieldErrors []FieldError

// IndexedFieldError is a FieldError of one element of a list the body
// holds (an event of a batch), named by its index.
type IndexedFieldError struct {
	Index int `json:"index"`
	FieldError
}

// IndexedFieldErrors lists every invalid field of a list's elements.
type IndexedFieldErrors []IndexedFieldError

// Index names one element of a list the body holds: {"index":3}.
type Index struct {
	Index int `json:"index"`
}

// IDs names the stored things a request conflicts with: {"ids":[…]}.
type IDs struct {
	IDs []string `json:"ids"`
}

func (Field) details()              {}
func (FieldErrors) details()        {}
func (IndexedFieldErrors) details() {}
func (Index) details()              {}
func (IDs) details()                {}
