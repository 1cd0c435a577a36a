#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic, which Swift cannot call: this fixed-argument wrapper builds the option list.
   One daemon serves one listening socket that the caller created (or systemd passed); TLS is used when both PEM
   strings are given. */
static inline struct MHD_Daemon *sharepipe_mhd_start(
    unsigned int flags, int listen_fd, unsigned int thread_pool_size, unsigned int connection_limit,
    unsigned int connection_timeout_seconds, size_t connection_memory_limit, const char *tls_key_pem,
    const char *tls_cert_pem, MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls)
{
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_LISTEN_SOCKET, (intptr_t) listen_fd, NULL },
        { MHD_OPTION_THREAD_POOL_SIZE, (intptr_t) thread_pool_size, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, (intptr_t) connection_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t) connection_timeout_seconds, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t) connection_memory_limit, NULL },
        { MHD_OPTION_HTTPS_MEM_KEY, 0, (void *) tls_key_pem },
        { MHD_OPTION_HTTPS_MEM_CERT, 0, (void *) tls_cert_pem },
        { MHD_OPTION_END, 0, NULL },
    };
    if (tls_key_pem == NULL || tls_cert_pem == NULL) {
        options[5].option = MHD_OPTION_END;
    } else {
        flags |= MHD_USE_TLS;
    }
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, handler_cls, MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}
