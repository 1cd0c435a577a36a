#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic, which Swift cannot call: this fixed-argument wrapper builds the option list.
   One daemon serves one listening socket that the caller created (or systemd passed); TLS is used when both PEM
   strings are given. */
static inline struct MHD_Daemon *sharepipe_mhd_start(
    unsigned int flags, int listen_fd, unsigned int thread_pool_size, unsigned int connection_limit,
    unsigned int per_client_limit, unsigned int connection_timeout_seconds, size_t connection_memory_limit,
    const char *tls_key_pem, const char *tls_cert_pem, MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, MHD_NotifyConnectionCallback notify,
    void *(*request_begun)(void *cls, const char *uri, struct MHD_Connection *connection), void *cls)
{
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_LISTEN_SOCKET, (intptr_t) listen_fd, NULL },
        { MHD_OPTION_THREAD_POOL_SIZE, (intptr_t) thread_pool_size, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, (intptr_t) connection_limit, NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t) per_client_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t) connection_timeout_seconds, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t) connection_memory_limit, NULL },
        { MHD_OPTION_HTTPS_MEM_KEY, 0, (void *) tls_key_pem },
        { MHD_OPTION_HTTPS_MEM_CERT, 0, (void *) tls_cert_pem },
        { MHD_OPTION_END, 0, NULL },
    };
    if (tls_key_pem == NULL || tls_cert_pem == NULL) {
        options[6].option = MHD_OPTION_END;
    } else {
        flags |= MHD_USE_TLS;
    }
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, cls, MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
        MHD_OPTION_NOTIFY_CONNECTION, notify, cls, MHD_OPTION_URI_LOG_CALLBACK, request_begun, cls,
        MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/* MHD_get_connection_info is variadic too: the two answers the server asks for. */
static inline void *sharepipe_mhd_socket_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

static inline int sharepipe_mhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/* An interim (1xx) response, written on the connection before libmicrohttpd writes anything for the request: on
   the socket for plain HTTP, through the connection's GnuTLS session for TLS. Called only from the access handler's
   call in which the head is processed (libmicrohttpd's own thread of the connection, nothing of its own queued
   yet). The socket is non-blocking: a full send buffer is waited for, at most `timeout_ms` in all. Returns 0 when
   every byte was written, -1 otherwise (the request is then given up). */
static inline int sharepipe_mhd_send_interim(
    struct MHD_Connection *connection, const void *bytes, size_t length, int timeout_ms)
{
    const union MHD_ConnectionInfo *fd_info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (fd_info == NULL) return -1;
    int fd = fd_info->connect_fd;
    const union MHD_ConnectionInfo *tls_info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = tls_info == NULL ? NULL : (gnutls_session_t) tls_info->tls_session;
    size_t done = 0;
    int waited = 0;
    while (done < length) {
        ssize_t sent;
        int again;
        if (session != NULL) {
            sent = gnutls_record_send(session, (const char *) bytes + done, length - done);
            again = sent == GNUTLS_E_AGAIN || sent == GNUTLS_E_INTERRUPTED;
        } else {
            sent = send(fd, (const char *) bytes + done, length - done, MSG_NOSIGNAL | MSG_DONTWAIT);
            again = sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
        }
        if (sent > 0) {
            done += (size_t) sent;
            continue;
        }
        if (!again || waited >= timeout_ms) return -1;
        struct pollfd wait = { fd, POLLOUT, 0 };
        (void) poll(&wait, 1, 10);
        waited += 10;
    }
    return 0;
}
