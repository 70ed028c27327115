// Package cedar lets a toolgate rule's condition be Cedar.
package cedar
