#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
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
