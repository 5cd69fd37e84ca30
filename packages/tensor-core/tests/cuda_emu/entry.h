/* The end of every emulated kernel group (included after the group's source
 * by the emulation compiler): one table entry per name expression, with a
 * launcher generated from the kernel's function type that unpacks
 * cuLaunchKernel's `void** args` into the kernel's parameters, and the
 * module's description the driver reads at load (ember_cuda_emu.h). */
#ifndef EMBER_CUDA_EMU_ENTRY_H
#define EMBER_CUDA_EMU_ENTRY_H

namespace ember_emu {

template <unsigned long... I> struct seq {};
template <unsigned long N, unsigned long... I> struct make_seq : make_seq<N - 1, N - 1, I...> {};
template <unsigned long... I> struct make_seq<0, I...> { typedef seq<I...> type; };

template <class T> struct is_ptr { static constexpr unsigned char value = 0; };
template <class T> struct is_ptr<T*> { static constexpr unsigned char value = 1; };

template <class F, F K> struct entry;
template <class... A, void (*K)(A...)> struct entry<void (*)(A...), K> {
    template <unsigned long... I> static void call(void** a, seq<I...>) {
        K(*static_cast<A*>(a[I])...);
    }
    static void run(void** a) { call(a, typename make_seq<sizeof...(A)>::type()); }
    static constexpr unsigned sizes[] = {(unsigned)sizeof(A)..., 0u};
    static constexpr unsigned aligns[] = {(unsigned)alignof(A)..., 0u};
    static constexpr unsigned char is_ptr_[] = {is_ptr<A>::value..., 0};
    static ember_emu_kernel make(const char* expr, unsigned max_threads) {
        return ember_emu_kernel{expr,    (const void*)K, &run,   (unsigned)sizeof...(A),
                                sizes,   aligns,         is_ptr_, max_threads};
    }
};

}  // namespace ember_emu

/* EMBER_EMU_KERNEL("name expression", launch bound or 0, name expression) */
#define EMBER_EMU_KERNEL(expr, bound, ...) \
    ember_emu::entry<decltype(&__VA_ARGS__), &__VA_ARGS__>::make(expr, bound)


/* EMBER_EMU_MODULE(EMBER_EMU_KERNEL(...), ...) defines the module's table. */
#define EMBER_EMU_MODULE(...)                                                               \
    static const ember_emu_kernel ember_emu_kernels[] = {__VA_ARGS__};                      \
    extern "C" __attribute__((visibility("default"))) const ember_emu_module*                \
    ember_emu_module_info(void) {                                                           \
        static const ember_emu_module m = {                                                 \
            EMBER_EMU_ABI,                                                                  \
            (unsigned)(sizeof ember_emu_kernels / sizeof ember_emu_kernels[0]),             \
            ember_emu_kernels,                                                              \
            ember_emu_dynamic_shared,                                                       \
            sizeof ember_emu_dynamic_shared,                                                \
            &ember_emu_current,                                                             \
            &ember_emu_api_};                                                               \
        return &m;                                                                          \
    }

#endif
