/* Form behaviours without inline handlers (the Content-Security-Policy runs the site's own scripts only):
   <select data-autosubmit> submits its form on change; <form data-confirm="question"> asks before it submits. */
(function () {
  "use strict";
  document.querySelectorAll("[data-autosubmit]").forEach(function (el) {
    el.addEventListener("change", function () { el.form.submit(); });
  });
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) { event.preventDefault(); }
    });
  });
})();
