# STRATA_SANITIZE=address,undefined or thread instruments every target.
if(STRATA_SANITIZE)
  add_compile_options(-fsanitize=${STRATA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${STRATA_SANITIZE})
endif()
