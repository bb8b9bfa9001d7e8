package natsconn

// ReconnectDelay exposes the reconnect backoff to the tests.
var ReconnectDelay = reconnectDelay
var RetryDelay = retryDelay
