# BPF CO-RE programs as libbpf skeletons.
#
#   strata_add_bpf_skeleton(<target> <source.bpf.c>
#                           [NAME <skeleton name>]      # default: <source> without .bpf.c
#                           [INCLUDE_DIRS <dir>...]     # extra -I for the BPF compile
#                           [DEPENDS <file>...]         # extra files the compile reads
#                           [COMPILE_OPTIONS <flag>...]) # extra clang flags (e.g. -mcpu=v3)
#
# compiles <source.bpf.c> with clang for the BPF target against a vmlinux.h
# generated once per build tree, turns the object into <name>.skel.h with
# `bpftool gen skeleton`, and defines the INTERFACE target <target>: link it
# and `#include "<name>.skel.h"`. The skeleton embeds the object, so nothing
# is loaded from disk at run time (the objects are installed only to be looked at).
#
# Why CO-RE: the object carries BTF relocations that libbpf resolves against
# the running kernel's /sys/kernel/btf/vmlinux when it loads, so one build runs
# on other kernels; vmlinux.h only has to come from *a* kernel with BTF.
#
# Cache variables: STRATA_CLANG, STRATA_BPFTOOL (the tools),
# STRATA_VMLINUX_BTF (the BTF that vmlinux.h is dumped from).

find_program(STRATA_CLANG NAMES clang clang-14 clang-15 clang-16
             DOC "clang that can target BPF (compiles bpf/*.bpf.c)")
find_program(STRATA_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin
             DOC "bpftool (generates vmlinux.h and the libbpf skeletons)")
set(STRATA_VMLINUX_BTF /sys/kernel/btf/vmlinux CACHE FILEPATH
    "Kernel BTF from which vmlinux.h is generated")

# vmlinux.h is large and only changes with the kernel's types, so it is made at
# configure time, once per build tree; delete it to regenerate.
function(_strata_bpf_vmlinux_header out_dir_var)
  set(dir ${CMAKE_BINARY_DIR}/bpf/vmlinux)
  set(header ${dir}/vmlinux.h)
  if(NOT EXISTS ${header})
    if(NOT EXISTS ${STRATA_VMLINUX_BTF})
      message(FATAL_ERROR
        "strata_add_bpf_skeleton: STRATA_VMLINUX_BTF=${STRATA_VMLINUX_BTF} does not exist. "
        "Build on a kernel with CONFIG_DEBUG_INFO_BTF=y, or point STRATA_VMLINUX_BTF at a "
        "vmlinux file that carries BTF.")
    endif()
    file(MAKE_DIRECTORY ${dir})
    execute_process(
      COMMAND ${STRATA_BPFTOOL} btf dump file ${STRATA_VMLINUX_BTF} format c
      OUTPUT_FILE ${header}.tmp
      ERROR_VARIABLE err
      RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      file(REMOVE ${header}.tmp)
      message(FATAL_ERROR
        "strata_add_bpf_skeleton: `${STRATA_BPFTOOL} btf dump file ${STRATA_VMLINUX_BTF} "
        "format c` failed (${rc}): ${err}")
    endif()
    file(RENAME ${header}.tmp ${header})
    message(STATUS "strata: generated ${header} from ${STRATA_VMLINUX_BTF}")
  endif()
  set(${out_dir_var} ${dir} PARENT_SCOPE)
endfunction()

# libbpf's __TARGET_ARCH_* names, which its PT_REGS macros need.
function(_strata_bpf_target_arch out_var)
  string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" proc)
  if(proc MATCHES "^(x86_64|amd64|i.86)$")
    set(arch x86)
  elseif(proc MATCHES "^(aarch64|arm64)$")
    set(arch arm64)
  elseif(proc MATCHES "^ppc64")
    set(arch powerpc)
  elseif(proc MATCHES "^s390")
    set(arch s390)
  elseif(proc MATCHES "^riscv")
    set(arch riscv)
  else()
    message(FATAL_ERROR "strata_add_bpf_skeleton: no BPF target arch for ${CMAKE_SYSTEM_PROCESSOR}")
  endif()
  set(${out_var} ${arch} PARENT_SCOPE)
endfunction()

function(strata_add_bpf_skeleton target source)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "NAME" "INCLUDE_DIRS;DEPENDS;COMPILE_OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "strata_add_bpf_skeleton(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT STRATA_CLANG)
    message(FATAL_ERROR "strata_add_bpf_skeleton: clang not found; it compiles the BPF programs. "
                        "Install it (apt-get install clang) or set STRATA_CLANG.")
  endif()
  if(NOT STRATA_BPFTOOL)
    message(FATAL_ERROR "strata_add_bpf_skeleton: bpftool not found; it generates vmlinux.h and the "
                        "skeletons. Install it (apt-get install bpftool) or set STRATA_BPFTOOL.")
  endif()

  get_filename_component(src ${source} ABSOLUTE)
  if(NOT EXISTS ${src})
    message(FATAL_ERROR "strata_add_bpf_skeleton(${target}): source ${src} does not exist")
  endif()
  if(arg_NAME)
    set(name ${arg_NAME})
  else()
    get_filename_component(file ${src} NAME)
    string(REGEX REPLACE "(\\.bpf)?\\.c$" "" name ${file})
  endif()

  _strata_bpf_vmlinux_header(vmlinux_dir)
  _strata_bpf_target_arch(arch)

  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${target})
  set(object ${out_dir}/${name}.bpf.o)
  set(skeleton ${out_dir}/${name}.skel.h)
  set(include_flags -I${vmlinux_dir} -I${CMAKE_CURRENT_SOURCE_DIR})
  foreach(dir IN LISTS arg_INCLUDE_DIRS LIBBPF_INCLUDE_DIRS)
    list(APPEND include_flags -I${dir})
  endforeach()

  # -g keeps the BTF that CO-RE relocations and the skeleton need.
  add_custom_command(
    OUTPUT ${object}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${STRATA_CLANG} -g -O2 -Wall -target bpf -D__TARGET_ARCH_${arch}
            ${arg_COMPILE_OPTIONS} ${include_flags} -MD -MF ${object}.d -c ${src} -o ${object}
    DEPENDS ${src} ${vmlinux_dir}/vmlinux.h ${arg_DEPENDS}
    DEPFILE ${object}.d
    COMMENT "BPF ${name}: clang -target bpf"
    VERBATIM)
  # bpftool writes the skeleton to stdout; going through a temporary file keeps a
  # failed run from leaving a truncated header that looks up to date.
  add_custom_command(
    OUTPUT ${skeleton}
    COMMAND sh -c "\"$0\" gen skeleton \"$1\" name \"$2\" > \"$3.tmp\" && mv \"$3.tmp\" \"$3\""
            ${STRATA_BPFTOOL} ${object} ${name} ${skeleton}
    DEPENDS ${object}
    COMMENT "BPF ${name}: bpftool gen skeleton"
    VERBATIM)

  add_custom_target(${target}_generate DEPENDS ${skeleton})
  # The objects are installed for inspection (bpftool prog load, llvm-objdump)
  # to <datadir>/strata/bpf by cmake/StrataInstall.cmake.
  set_property(GLOBAL APPEND PROPERTY STRATA_BPF_OBJECTS ${object})
  add_library(${target} INTERFACE)
  # SYSTEM: the generated C is compiled inside C++ sources and must not trip
  # strata's warning set (old-style casts, sign conversions).
  target_include_directories(${target} SYSTEM INTERFACE ${out_dir})
  target_link_libraries(${target} INTERFACE PkgConfig::LIBBPF)
  add_dependencies(${target} ${target}_generate)
endfunction()
