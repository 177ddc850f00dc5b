'use strict';
// Expected failures: reported as a message, never with a stack trace.

class UserError extends Error {
  constructor(message, file = null) {
    super(message);
    this.file = file;
  }
}

module.exports = { UserError };
