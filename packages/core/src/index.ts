export * from './errors/index.js';
export * from './log/index.js';
export * from './schemas/index.js';
export * from './throttle/index.js';
export * from './transport/index.js';
export * from './clients/index.js';
export * from './download/index.js';
export * from './engine/index.js';
